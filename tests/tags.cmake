# Run after a test executable is linked (cmake -P): writes CTEST_FILE, which sets the ctest properties its
# Catch2 tags ask for on the entries catch_discover_tests made (included after them, so these win):
#   [slow]       label slow instead of the executable's label, and TIMEOUT SLOW_TIMEOUT
#   [two-cores]  PROCESSORS 2 and COST 500: two of the test command's four slots, beside two other tests at
#                most, never beside the demo or another [two-cores] test (a lock they share). Several
#                consumers or workers whose interleaving is the point: alone they keep 0.8 of the two cores
#                busy, and all fourteen passed three times each beside a stream of other integration tests
#                one at a time, and again beside two such streams (docs/benchmarks.md). COST 500 starts each
#                as soon as the lock and two slots are free (after the demo, or the last one), not at the end
#   [lanes]      PROCESSORS 3, the same lock, and TIMEOUT LANES_TIMEOUT: many processes at once for minutes, in
#                lanes of its own (the demo): three of the test command's four slots, beside one other test.
#                With two tests beside it, its HTTP lease cell (a delay 500 ms past the lease, within which the
#                client's retry must take the lock) once lost its race and passed. COST 1000 starts it first, so
#                that the run does not end on it alone
# A test case declares what it needs; nothing here lists test names, so a new test case gets its
# executable's label and one processor until its tags say otherwise.
# Inputs: TEST_EXECUTABLE, TEST_PREFIX, SLOW_TIMEOUT, LANES_TIMEOUT, CTEST_FILE.
set(script "")

function(tagged spec properties)
  execute_process(COMMAND "${TEST_EXECUTABLE}" "${spec}" --list-test-names-only
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  # Catch2 exits with the number of test cases listed: 0 is none, a negative status a crash.
  if(rc LESS 0 OR NOT rc MATCHES "^[0-9]+$")
    message(FATAL_ERROR "${TEST_EXECUTABLE} ${spec} --list-test-names-only: ${rc}\n${out}")
  endif()
  string(REPLACE "\n" ";" names "${out}")
  foreach(name IN LISTS names)
    if(NOT name STREQUAL "")
      string(APPEND script "set_tests_properties([==[${TEST_PREFIX}${name}]==] PROPERTIES ${properties})\n")
    endif()
  endforeach()
  set(script "${script}" PARENT_SCOPE)
endfunction()

tagged("[slow]" "LABELS slow TIMEOUT ${SLOW_TIMEOUT}")
tagged("[two-cores]" "PROCESSORS 2 RESOURCE_LOCK idem_cores COST 500")
tagged("[lanes]" "PROCESSORS 3 RESOURCE_LOCK idem_cores TIMEOUT ${LANES_TIMEOUT} COST 1000")
file(WRITE "${CTEST_FILE}" "${script}")
