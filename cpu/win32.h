/* <windows.h> with Windows 7's API and newer (slim reader/writer locks,
 * condition variables, processor groups): older MinGW-w64 releases default
 * to XP's. */
#ifndef PLEAT_CPU_WIN32_H
#define PLEAT_CPU_WIN32_H

#if !defined(_WIN32_WINNT) || _WIN32_WINNT < 0x0601
#undef _WIN32_WINNT
#define _WIN32_WINNT 0x0601
#endif
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#endif
