#!/usr/bin/env bash
# `make iso`: a GRUB (BIOS) rescue ISO at build/lightpath.iso that boots
# lightpath by multiboot2 with the two benchmark guests as modules, for real
# hardware (and Bochs). LP_OPTS: boot options put on the multiboot2 line.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

for tool in grub-mkrescue xorriso mformat; do
	command -v "$tool" >/dev/null 2>&1 ||
		{ echo "lightpath: error: $tool not found (run 'make deps')" >&2; exit 1; }
done
[[ -d /usr/lib/grub/i386-pc ]] ||
	{ echo "lightpath: error: GRUB BIOS modules missing (/usr/lib/grub/i386-pc; run 'make deps')" >&2; exit 1; }
for f in build/lightpath.elf build/guests/bench32.elf build/guests/bench64.elf; do
	[[ -f "$f" ]] || { echo "lightpath: error: $f not built (run 'make all')" >&2; exit 1; }
done

tree=build/iso
rm -rf "$tree"
mkdir -p "$tree/boot/grub"
cp build/lightpath.elf build/guests/bench32.elf build/guests/bench64.elf "$tree/boot/"

opts=${LP_OPTS:-}
cat >"$tree/boot/grub/grub.cfg" <<CFG
set timeout=0
menuentry "lightpath" {
	multiboot2 /boot/lightpath.elf${opts:+ $opts}
	module2 /boot/bench32.elf bench32.elf
	module2 /boot/bench64.elf bench64.elf
	boot
}
CFG

out=build/lightpath.iso
log=build/iso.log
if ! grub-mkrescue -o "$out.tmp" "$tree" >"$log" 2>&1; then
	cat "$log" >&2
	echo "lightpath: error: grub-mkrescue failed (see above)" >&2
	rm -f "$out.tmp"
	exit 1
fi
mv "$out.tmp" "$out"
echo "lightpath: wrote $out ($(du -h "$out" | cut -f1)); boot options: ${opts:-(defaults)}"
