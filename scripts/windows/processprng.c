/*
 * TEST-ONLY stand-in for Windows' bcryptprimitives.dll, for Wine 8.0, which lacks it.
 * Rust's Windows std (1.78 and later) and the getrandom crate import ProcessPrng from
 * that DLL; without it no Rust exe or DLL loads under Wine 8.0. This fills the buffer
 * from RtlGenRandom (advapi32's SystemFunction036), Windows' own generator.
 *
 * scripts/windows.sh builds it and copies it into the throw-away Wine prefix it runs
 * the tests in. Never ship it: Windows 10 and later have the real DLL.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG chunk = len > 0x10000000u ? 0x10000000u : (ULONG)len;
        if (!SystemFunction036(data, chunk)) {
            return FALSE;
        }
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
