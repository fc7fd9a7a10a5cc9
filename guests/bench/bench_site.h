/* BENCH_SITE(row): marks a bench bracket's first instruction after its
 * opening RDTSC, with its row's name, in a section that is never loaded
 * (tools/exit_trace.py single-steps a bracket from there): no instruction
 * is added. Used inside the bracket's asm, before that instruction. */
#ifndef GUESTS_BENCH_BENCH_SITE_H
#define GUESTS_BENCH_BENCH_SITE_H

#ifdef __x86_64__
#define BENCH_SITE_PTR ".quad"
#else
#define BENCH_SITE_PTR ".long"
#endif
#define BENCH_SITE(row)                                                                    \
	".pushsection .lp_bench_sites,\"\",@progbits\n\t" BENCH_SITE_PTR " 9100f\n\t"        \
	".asciz \"" row "\"\n\t.popsection\n9100:\t"

#endif
