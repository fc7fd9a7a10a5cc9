/* QEMU fw_cfg, the traditional (port I/O) interface: selector at 0x510
 * (16-bit write), data at 0x511 (byte reads, auto-incrementing; past the end
 * of an item, and for unknown items, reads 0). No DMA interface (the ID
 * item says so). Items: signature "QEMU" (0x0000), ID = 1 (0x0001), RAM size
 * (0x0003, u64 LE), number of CPUs (0x0005, u16), max CPUs (0x000f, u16)
 * and an empty file directory (0x0019: a big-endian u32 count of 0). */
#ifndef DEV_FWCFG_H
#define DEV_FWCFG_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/device.h"

#define FWCFG_BASE   0x510u
#define FWCFG_PORTS  2u

#define FW_CFG_SIGNATURE 0x0000u
#define FW_CFG_ID        0x0001u
#define FW_CFG_RAM_SIZE  0x0003u
#define FW_CFG_NB_CPUS   0x0005u
#define FW_CFG_MAX_CPUS  0x000fu
#define FW_CFG_FILE_DIR  0x0019u

struct fwcfg {
	uint16_t selector;
	uint32_t offset;
	uint64_t ram_size;
	uint16_t ncpus, max_cpus;
};

/* The RAM size and CPU count are the VM's (dev_ram_size, dev_nr_vcpus). */
void fwcfg_init(void *dev, struct dev_host *h);
int fwcfg_io(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);
extern const struct dev_desc fwcfg_desc;

#endif
