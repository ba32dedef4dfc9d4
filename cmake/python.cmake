# python.cmake: where the Python module installs, which interpreter runs its tests,
# and what a sanitizer build must preload for an interpreter to load it. Included by
# the top-level CMakeLists.txt once Python3 and pybind11 are found.

# BERTH_PYTHON_INSTALL_DIR: relative to the prefix, the directory that interpreter
# searches under a prefix of its own kind: lib/pythonX.Y/dist-packages for Debian's
# python3 (which searches /usr/local/lib/pythonX.Y/dist-packages, and no
# site-packages, under /usr/local), lib/pythonX.Y/site-packages for any other.
execute_process(
  COMMAND ${Python3_EXECUTABLE} -c
    "import sys, sysconfig; leaf = 'dist-packages' if 'dist-packages' in sysconfig.get_path('platlib') else 'site-packages'; print('lib/python%d.%d/%s' % (sys.version_info[0], sys.version_info[1], leaf))"
  OUTPUT_VARIABLE berth_python_site OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0 OR NOT berth_python_site)
  set(berth_python_site "lib/python${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}/site-packages")
endif()
set(BERTH_PYTHON_INSTALL_DIR "${berth_python_site}" CACHE STRING
  "Where `cmake --install` puts the Python module, relative to the prefix")

# BERTH_PYTEST_PYTHON: an interpreter of the module's version (X.Y: the extension is
# built for one) that has pytest — the one found, else the one Debian's pytest runs
# under (python3-pytest: /usr/bin/pytest-3's first line), since the interpreter first on
# PATH (a pyenv, a venv) need not have it. Empty when neither does: the tests then fail
# saying so (python/CMakeLists.txt).
if(NOT DEFINED CACHE{BERTH_PYTEST_PYTHON})
  set(candidates ${Python3_EXECUTABLE})
  find_program(berth_pytest_program NAMES pytest-3 pytest)
  if(berth_pytest_program)
    file(STRINGS ${berth_pytest_program} shebang LIMIT_COUNT 1)
    if(shebang MATCHES "^#! *([^ ]+)")
      list(APPEND candidates ${CMAKE_MATCH_1})
    endif()
  endif()
  unset(berth_pytest_program CACHE)
  set(found "")
  foreach(py IN LISTS candidates)
    execute_process(COMMAND ${py} -c
        "import sys, pytest; print('%d.%d' % sys.version_info[:2])"
      OUTPUT_VARIABLE v OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
    if(rc EQUAL 0 AND v STREQUAL "${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}")
      set(found ${py})
      break()
    endif()
  endforeach()
  set(BERTH_PYTEST_PYTHON "${found}" CACHE FILEPATH
    "The interpreter (of the module's version, with pytest) that runs the Python tests")
  if(NOT found)
    message(WARNING "berth: no python${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR} with "
                    "pytest: the Python module's tests will fail (install python3-pytest)")
  endif()
endif()

# BERTH_PYTHON_PRELOAD: the sanitizer runtime(s) an interpreter must load before a
# sanitizer-built module (the dev preset's ASan+UBSan), colon-separated as LD_PRELOAD
# takes them, and the options the tests run them with (BERTH_PYTHON_SANITIZER_OPTIONS).
# See python/CMakeLists.txt for why the module is not built without them instead.
# (ThreadSanitizer builds no module: CMakeLists.txt.)
set(BERTH_PYTHON_PRELOAD "")
set(BERTH_PYTHON_SANITIZER_OPTIONS "")
if(BERTH_SANITIZE)
  set(runtimes "")
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    # clang's shared ASan runtime carries UBSan's handlers too.
    if(BERTH_SANITIZE MATCHES "address")
      list(APPEND runtimes libclang_rt.asan-${CMAKE_SYSTEM_PROCESSOR}.so)
    elseif(BERTH_SANITIZE MATCHES "undefined")
      list(APPEND runtimes libclang_rt.ubsan_standalone-${CMAKE_SYSTEM_PROCESSOR}.so)
    endif()
  else()
    if(BERTH_SANITIZE MATCHES "address")
      list(APPEND runtimes libasan.so)
    endif()
    if(BERTH_SANITIZE MATCHES "undefined")
      list(APPEND runtimes libubsan.so)
    endif()
  endif()
  set(paths "")
  foreach(rt IN LISTS runtimes)
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${rt}
      OUTPUT_VARIABLE path OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(IS_ABSOLUTE "${path}" AND EXISTS "${path}")
      list(APPEND paths ${path})
    else()
      message(WARNING "berth: ${CMAKE_CXX_COMPILER} has no ${rt}: the sanitizer-built Python "
                      "module cannot be loaded by its tests")
    endif()
  endforeach()
  list(JOIN paths ":" BERTH_PYTHON_PRELOAD)
  if(BERTH_SANITIZE MATCHES "address")
    # CPython's own allocations still held at exit are not leaks of berth's.
    set(BERTH_PYTHON_SANITIZER_OPTIONS "ASAN_OPTIONS=detect_leaks=0")
  endif()
endif()
