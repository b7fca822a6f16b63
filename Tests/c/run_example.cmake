# run_example.cmake — runs one program and checks its exit status and output.
#
#   cmake -DEXPECT_EXIT=0
#         [-DEXPECT_STDOUT=file]  [-DEXPECT_STDERR=file]     exact output
#         [-DSTDOUT_MATCHES=regex] [-DSTDERR_MATCHES=regex]  a regular expression
#         [-DWORKING_DIRECTORY=dir]
#         -P run_example.cmake -- PROGRAM [ARGS...]
#
# The examples' smoke tests use it so that a ctest test fails on a wrong exit
# status as well as on wrong output (PASS_REGULAR_EXPRESSION ignores the exit
# status). Without EXPECT_STDERR or STDERR_MATCHES, stderr must be empty. A
# mismatch prints the whole output and, for exact files, a diff.

set(command "")
set(after_separator FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE 0 ${last})
  if(after_separator)
    list(APPEND command "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(after_separator TRUE)
  endif()
endforeach()
if(NOT command)
  message(FATAL_ERROR "run_example.cmake: no command after --")
endif()
if(NOT DEFINED EXPECT_EXIT)
  set(EXPECT_EXIT 0)
endif()
if(NOT DEFINED WORKING_DIRECTORY)
  set(WORKING_DIRECTORY ".")
endif()

execute_process(
  COMMAND ${command}
  WORKING_DIRECTORY "${WORKING_DIRECTORY}"
  RESULT_VARIABLE status
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err
  TIMEOUT 120)

set(problems "")
set(diffs "")

if(NOT status STREQUAL "${EXPECT_EXIT}")
  string(APPEND problems "exit status ${status}, expected ${EXPECT_EXIT}\n")
endif()

# compare(NAME TEXT EXPECTED_FILE REGEX)
function(compare name text expected_file regex)
  if(expected_file)
    file(READ "${expected_file}" expected)
    if(NOT text STREQUAL expected)
      string(RANDOM LENGTH 8 tag)
      # Beside the expected file would be the source tree: use the temporary folder.
      set(tmp "/tmp")
      if(DEFINED ENV{TMPDIR})
        set(tmp "$ENV{TMPDIR}")
      endif()
      set(actual_file "${tmp}/run_example_${name}_${tag}.txt")
      file(WRITE "${actual_file}" "${text}")
      execute_process(COMMAND diff -u "${expected_file}" "${actual_file}" OUTPUT_VARIABLE diff)
      file(REMOVE "${actual_file}")
      set(problems "${problems}${name} differs from ${expected_file}\n" PARENT_SCOPE)
      set(diffs "${diffs}--- diff of ${name}\n${diff}" PARENT_SCOPE)
    endif()
  elseif(NOT "${regex}" STREQUAL "")
    if(NOT text MATCHES "${regex}")
      set(problems "${problems}${name} does not match ${regex}\n" PARENT_SCOPE)
    endif()
  elseif(name STREQUAL "stderr" AND NOT text STREQUAL "")
    set(problems "${problems}stderr is not empty\n" PARENT_SCOPE)
  endif()
endfunction()

compare(stdout "${out}" "${EXPECT_STDOUT}" "${STDOUT_MATCHES}")
compare(stderr "${err}" "${EXPECT_STDERR}" "${STDERR_MATCHES}")

if(problems)
  string(REPLACE ";" " " shown "${command}")
  # Plain message() keeps the text as it is; FATAL_ERROR would re-indent it.
  message("--- command\n${shown}\n--- stdout\n${out}--- stderr\n${err}${diffs}---")
  message(FATAL_ERROR "${problems}")
endif()
