# Cross-compiling the CMake consumer for Windows with mingw-w64 from Debian
# (scripts/windows.sh smoke):
#   cmake -S tests/cmake-consumer -B BUILD -DCMAKE_TOOLCHAIN_FILE=tests/cmake-consumer/mingw-w64-x86_64.cmake \
#         -DCMAKE_PREFIX_PATH=PREFIX
# ctest then runs the programs under Wine (CMAKE_CROSSCOMPILING_EMULATOR).
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
# The posix flavour: std::thread needs it with GCC 12 (the win32 flavour has none).
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# The tickwire prefix lives outside the root path: search both.
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
# The C and C++ runtimes (libgcc, libstdc++, winpthread) linked in statically, so a
# program needs only tickwire.dll beside it. -static changes only how -l names are
# looked up: tickwire::tickwire still links the import library by its full path.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
find_program(_wine NAMES wine64 wine PATHS /usr/lib/wine NO_DEFAULT_PATH)
if(_wine)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${_wine}")
endif()
