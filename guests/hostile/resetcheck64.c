/* resetcheck64: resetcheck in long mode, which adds the registers only
 * 64-bit code reaches (XMM8-15, YMM8-15, Hi16_ZMM, CR8). */
#include "guests/hostile/resetcheck.c"
