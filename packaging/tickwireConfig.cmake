# CMake package config for an installed tickwire (scripts/install.sh puts it in
# PREFIX/lib/cmake/tickwire). Relocatable: the prefix is found from this file's place.
#
#   find_package(tickwire 0.1 REQUIRED)    # with CMAKE_PREFIX_PATH=PREFIX
#   target_link_libraries(game PRIVATE tickwire::tickwire)          # libtickwire.so / .dylib / tickwire.dll
#   target_link_libraries(game PRIVATE tickwire::tickwire_static)   # libtickwire.a / tickwire.lib
#
# On Windows the DLL is PREFIX/bin/tickwire.dll; the link-time files follow the
# compiler: MinGW links libtickwire.dll.a (import) and libtickwire.a (static), built for
# x86_64-pc-windows-gnu; MSVC links tickwire.dll.lib and tickwire.lib, built for
# x86_64-pc-windows-msvc. The MinGW pair is tested (cross-built, run under Wine); the
# MSVC pair is not.
#
# Both targets carry the include directory (tickwire.h, and tickwire.hpp for C++17).

include(CMakeFindDependencyMacro)

get_filename_component(_tickwire_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

if(MINGW)
  set(_tickwire_implib "libtickwire.dll.a")
  set(_tickwire_static "${_tickwire_prefix}/lib/libtickwire.a")
elseif(WIN32)
  set(_tickwire_implib "tickwire.dll.lib")
  set(_tickwire_static "${_tickwire_prefix}/lib/tickwire.lib")
else()
  set(_tickwire_static "${_tickwire_prefix}/lib/libtickwire.a")
endif()

if(NOT TARGET tickwire::tickwire)
  add_library(tickwire::tickwire SHARED IMPORTED)
  set_target_properties(tickwire::tickwire PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_tickwire_prefix}/include")
  if(WIN32)
    set_target_properties(tickwire::tickwire PROPERTIES
      IMPORTED_LOCATION "${_tickwire_prefix}/bin/tickwire.dll"
      IMPORTED_IMPLIB "${_tickwire_prefix}/lib/${_tickwire_implib}")
  elseif(APPLE)
    set_target_properties(tickwire::tickwire PROPERTIES
      IMPORTED_LOCATION "${_tickwire_prefix}/lib/libtickwire.dylib")
  else()
    # The library's SONAME carries the ABI version (build.rs): programs record
    # libtickwire.so.N, the installed file; libtickwire.so links to it.
    file(GLOB _tickwire_sonames "${_tickwire_prefix}/lib/libtickwire.so.[0-9]*")
    set_target_properties(tickwire::tickwire PROPERTIES
      IMPORTED_LOCATION "${_tickwire_prefix}/lib/libtickwire.so")
    if(_tickwire_sonames)
      list(GET _tickwire_sonames 0 _tickwire_soname_path)
      get_filename_component(_tickwire_soname "${_tickwire_soname_path}" NAME)
      set_target_properties(tickwire::tickwire PROPERTIES IMPORTED_SONAME "${_tickwire_soname}")
    else()
      set_target_properties(tickwire::tickwire PROPERTIES IMPORTED_NO_SONAME TRUE)
    endif()
  endif()
endif()

if(NOT TARGET tickwire::tickwire_static AND EXISTS "${_tickwire_static}")
  add_library(tickwire::tickwire_static STATIC IMPORTED)
  set_target_properties(tickwire::tickwire_static PROPERTIES
    IMPORTED_LOCATION "${_tickwire_static}"
    IMPORTED_LINK_INTERFACE_LANGUAGES "C"
    INTERFACE_INCLUDE_DIRECTORIES "${_tickwire_prefix}/include")
  # What the Rust standard library needs from the system (rustc --print
  # native-static-libs). The Linux and MinGW lists are checked by tests/run.sh and
  # scripts/windows.sh; the macOS list is the usual one for Rust staticlibs, untested.
  if(WIN32)
    set_target_properties(tickwire::tickwire_static PROPERTIES
      INTERFACE_LINK_LIBRARIES "ws2_32;userenv;ntdll;bcrypt;advapi32;kernel32")
  elseif(APPLE)
    set_target_properties(tickwire::tickwire_static PROPERTIES
      INTERFACE_LINK_LIBRARIES "-framework CoreFoundation;-framework Security;iconv;System")
  else()
    find_dependency(Threads)
    set_target_properties(tickwire::tickwire_static PROPERTIES
      INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS};m;rt;util;gcc_s")
  endif()
endif()

unset(_tickwire_static)
unset(_tickwire_implib)
unset(_tickwire_prefix)
