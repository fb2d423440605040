# Fails when a tracked file names an absolute path of this machine (a home or work
# directory, the checkout itself): seed documents are cited by file name
# (e.g. 000_15d34a4d5aa90e13.txt; they live in ../shared/seeds/ beside a checkout),
# and nothing else in the repository may depend on where one machine keeps it.
#
#   cmake -DROOT=<checkout> -P ci/check_no_absolute_paths.cmake
#
# Files: `git ls-files` when ROOT has a .git (directory or worktree file), else every
# file under ROOT except build/ and .git/. Flagged, anywhere in a line:
#   - a path starting with one of the directories below (DIRS, default work root home),
#     as a path component: "x/<dir>/" inside a relative path is not flagged;
#   - the checkout's own absolute path (ROOT) and $HOME, when they are not "/".
# Prints "file:line: text" for each hit and exits non-zero if there is any.
cmake_minimum_required(VERSION 3.25)
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<checkout> [-DDIRS=a;b] -P check_no_absolute_paths.cmake")
endif()
get_filename_component(ROOT "${ROOT}" ABSOLUTE)
if(NOT DIRS)
  set(DIRS work root home)
endif()

# ---- the files ---------------------------------------------------------------
set(files "")
find_program(_git git)
if(EXISTS "${ROOT}/.git" AND _git)
  execute_process(COMMAND "${_git}" -C "${ROOT}" ls-files
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "git ls-files failed in ${ROOT}: ${err}")
  endif()
  string(REPLACE "\n" ";" files "${out}")
  set(how "git ls-files")
else()
  file(GLOB_RECURSE files RELATIVE "${ROOT}" "${ROOT}/*")
  list(FILTER files EXCLUDE REGEX "^(build|\\.git)/")
  set(how "every file under the source tree")
endif()
list(FILTER files EXCLUDE REGEX "^$")
list(LENGTH files nfiles)
if(nfiles EQUAL 0)
  message(FATAL_ERROR "no files found under ${ROOT} (${how}): nothing was checked")
endif()

# ---- the patterns ------------------------------------------------------------
function(_regex_escape out text)
  string(REGEX REPLACE "([][.*+?^$()|\\\\])" "\\\\\\1" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()
list(JOIN DIRS "|" dirs_alt)
# Preceded by start of line or a character that cannot be part of a relative path.
set(patterns "(^|[^A-Za-z0-9_.~+-])/(${dirs_alt})/")
foreach(p IN ITEMS "${ROOT}" "$ENV{HOME}")
  if(p AND NOT p STREQUAL "/")
    _regex_escape(e "${p}")
    list(APPEND patterns "${e}(/|[^A-Za-z0-9_.~+-]|$)")
  endif()
endforeach()
list(JOIN patterns "|" regex)

# ---- the scan ------------------------------------------------------------------
set(hits 0)
set(bad_files 0)
foreach(f IN LISTS files)
  set(path "${ROOT}/${f}")
  if(IS_DIRECTORY "${path}" OR NOT EXISTS "${path}")
    continue() # submodule entries, files deleted in the work tree
  endif()
  file(STRINGS "${path}" lines REGEX "${regex}")
  if(NOT lines)
    continue()
  endif()
  math(EXPR bad_files "${bad_files} + 1")
  # Line numbers: walk the file line by line (not as a CMake list, which would split lines at ';'),
  # only for files with hits.
  file(READ "${path}" text)
  set(n 0)
  while(NOT text STREQUAL "")
    string(FIND "${text}" "\n" eol)
    if(eol EQUAL -1)
      set(line "${text}")
      set(text "")
    else()
      string(SUBSTRING "${text}" 0 ${eol} line)
      math(EXPR next "${eol} + 1")
      string(SUBSTRING "${text}" ${next} -1 text)
    endif()
    math(EXPR n "${n} + 1")
    if(line MATCHES "${regex}")
      message("${f}:${n}: ${line}")
      math(EXPR hits "${hits} + 1")
    endif()
  endwhile()
endforeach()
if(bad_files GREATER 0)
  message(FATAL_ERROR "${bad_files} file(s) name an absolute path of this machine (${hits} line(s) above; "
                      "checked ${nfiles} files from ${how}). Cite seed documents by file name and use "
                      "paths relative to the checkout.")
endif()
message(STATUS "no absolute machine paths in ${nfiles} files (${how})")
