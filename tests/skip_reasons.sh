#!/usr/bin/env bash
# skip_reasons.sh — ctest shows a skipped test's output nowhere, not even with --output-on-failure; ctest runs this
# after the tests (CTEST_CUSTOM_POST_TEST in BUILD/CTestCustom.cmake, written by tests/CMakeLists.txt) to print why
# each test of the run skipped: the "SKIP: reason" line a skipping test prints first (SKIP_REGULAR_EXPRESSION marks
# it skipped in the log, which is how a skip is told from a pass).
# Usage: bash tests/skip_reasons.sh BUILD
log=$1/Testing/Temporary/LastTest.log.tmp # this run's log: ctest renames it to LastTest.log after this script
[ -r "$log" ] || exit 0
awk '/^[0-9]+\/[0-9]+ Test: / { name = $3; reason = "" }
     /^SKIP: / && reason == "" { reason = substr($0, 7) }
     /^Skip regular expression found in output/ {
       if (!n++) print "Skipped, and why:"
       printf "  %s: %s\n", name, reason
     }' "$log"
exit 0
