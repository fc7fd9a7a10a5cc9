/* i8042 controller without devices. */
#include "dev/i8042.h"

void i8042_init(void *opaque, struct dev_host *h)
{
	struct i8042 *dev = opaque;
	dev->host = h;
	dev->status = I8042_STR_SYSFLAG | I8042_STR_UNLOCK;
	/* keyboard interrupt and translation on, as firmware leaves it;
	 * system flag set (POST passed) */
	dev->config = 0x45;
	dev->out = 0;
	dev->out_full = false;
	dev->pending_cmd = 0;
	dev->output_port = 0x01; /* bit 0: the reset line is not asserted */
}

const struct dev_desc i8042_desc = {
	.name = "i8042",
	DEV_RANGES(   /* 0x61, between them, is the PIT's */
		{ .base = I8042_DATA_PORT, .len = 1, .fn = i8042_io, .name = "i8042-data", .light = true },
		{ .base = I8042_CMD_PORT, .len = 1, .fn = i8042_io, .name = "i8042-cmd", .light = true }),
	.init = i8042_init,
};

static void reply(struct i8042 *dev, uint8_t v)
{
	dev->out = v;
	dev->out_full = true;
}

static int reset(struct i8042 *dev)
{
	dev_vm_end(dev->host, 0, "reset requested (i8042)");
	return IO_VM_END;
}

static int command(struct i8042 *dev, uint8_t cmd)
{
	switch (cmd) {
	case 0x20:               /* read configuration byte */
		reply(dev, dev->config);
		break;
	case 0x60:               /* write configuration byte: data follows */
	case 0xd1:               /* write output port: data follows */
	case 0xd2:               /* write keyboard output buffer */
	case 0xd3:               /* write aux output buffer */
	case 0xd4:               /* write to aux device */
		dev->pending_cmd = cmd;
		break;
	case 0xa7:               /* disable aux port */
		dev->config |= 0x20;
		break;
	case 0xa8:               /* enable aux port */
		dev->config &= ~0x20;
		break;
	case 0xa9:               /* aux interface test */
	case 0xab:               /* keyboard interface test */
		reply(dev, 0x00);
		break;
	case 0xaa:               /* controller self-test */
		reply(dev, 0x55);
		break;
	case 0xad:               /* disable keyboard port */
		dev->config |= 0x10;
		break;
	case 0xae:               /* enable keyboard port */
		dev->config &= ~0x10;
		break;
	case 0xd0:               /* read output port */
		reply(dev, dev->output_port);
		break;
	case 0xfe:               /* pulse the reset line */
		return reset(dev);
	default:
		break;           /* other commands: no reply */
	}
	return IO_OK;
}

static int data_write(struct i8042 *dev, uint8_t v)
{
	uint8_t cmd = dev->pending_cmd;
	dev->pending_cmd = 0;
	switch (cmd) {
	case 0x60:
		dev->config = v;
		if (v & 0x04)
			dev->status |= I8042_STR_SYSFLAG;
		else
			dev->status &= ~I8042_STR_SYSFLAG;
		break;
	case 0xd1:
		dev->output_port = v;
		if (!(v & 0x01))
			return reset(dev);
		break;
	case 0xd2:
	case 0xd3:
		reply(dev, v);   /* echoed as if the device had sent it */
		break;
	default:
		break;           /* to a device: nobody answers */
	}
	return IO_OK;
}

int i8042_io(void *opaque, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct i8042 *dev = opaque;
	(void)size;

	if (is_write) {
		uint8_t v = (uint8_t)*data;
		if (addr == I8042_CMD_PORT) {
			dev->status |= I8042_STR_CMD;
			return command(dev, v);
		}
		dev->status &= ~I8042_STR_CMD;
		return data_write(dev, v);
	}
	uint8_t v;
	if (addr == I8042_CMD_PORT) {
		v = dev->status | (dev->out_full ? I8042_STR_OBF : 0);
	} else {
		v = dev->out;
		dev->out_full = false;
	}
	*data = v;
	return IO_OK;
}
