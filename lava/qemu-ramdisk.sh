#!/bin/sh
# Builds the ramdisk the local QEMU LAVA device boots (tests/lava.rs): busybox-static for
# a shell, xrunrig with its shared libraries (from ldd), the kernel modules LAVA's test
# overlay disk needs (virtio_blk, ext4 and their dependencies, from the kernel's own
# package) and an /init that gives LAVA a root shell on the serial console.
#
# Usage: lava/qemu-ramdisk.sh XRUNRIG_BINARY LINUX_IMAGE_DEB|UNPACKED_DIR OUT.cpio.gz
# (a directory: the package already unpacked with dpkg-deb -x, modules .ko or .ko.xz)
# Needs: busybox-static, cpio, kmod (modprobe --show-depends), xz-utils, binutils (strip),
# dpkg-deb, gzip: all in .ci/setup already.
set -eu
xr=$1 deb=$2 out=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp" "$root/root" \
  "$root/etc" "$root/lib/modules" "$root/usr/local/bin"

cp /bin/busybox "$root/bin/busybox"
for a in $(/bin/busybox --list); do
  [ "$a" = busybox ] || ln -s busybox "$root/bin/$a"
done
strip --strip-debug -o "$root/bin/xrunrig" "$xr" 2>/dev/null || cp "$xr" "$root/bin/xrunrig"
for l in $(ldd "$xr" | grep -o '/[^ ]*'); do
  mkdir -p "$root$(dirname "$l")"
  cp -L "$l" "$root$l"
done

# LAVA attaches its overlay (the test definitions, lava-test-case …) as an ext2 disk and
# mounts it by UUID; the Debian kernel has virtio_blk and ext4 as modules.
if [ -d "$deb" ]; then
  k=$deb
else
  k=$work/k
  dpkg-deb -x "$deb" "$k"
fi
rel=$(ls "$k/lib/modules")
[ -f "$k/lib/modules/$rel/modules.dep" ] || depmod -b "$k" "$rel"
: >"$root/lib/modules/order"
for m in virtio_blk ext4; do
  modprobe -d "$k" -S "$rel" --show-depends "$m"
done | awk '$1 == "insmod" { print $2 }' | awk '!seen[$0]++' | while read -r ko; do
  name=$(basename "$ko" .xz)
  case "$ko" in
    *.xz) xz -dc "$ko" >"$root/lib/modules/$name" ;;
    *) cp "$ko" "$root/lib/modules/$name" ;;
  esac
  echo "$name" >>"$root/lib/modules/order"
done

cat >"$root/init" <<'INIT'
#!/bin/sh
export PATH=/usr/local/bin:/bin:/sbin:/usr/bin:/usr/sbin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
for m in $(cat /lib/modules/order); do insmod "/lib/modules/$m" 2>/dev/null; done
# No udev (and no blkid in Debian's busybox): the by-uuid links LAVA's test shell mounts
# its overlay with, read from each ext2/3/4 superblock (magic 0xEF53 at byte 1080, the
# UUID's 16 bytes at 1128).
mkdir -p /dev/disk/by-uuid
for i in 1 2 3 4 5 6 7 8 9 10; do
  for d in /dev/vd? /dev/sd?; do [ -b "$d" ] && break 2; done
  sleep 1
done
for dev in /dev/vd? /dev/sd?; do
  [ -b "$dev" ] || continue
  magic=$(dd if="$dev" bs=1 skip=1080 count=2 2>/dev/null | od -An -tx1 | tr -d ' \n')
  [ "$magic" = 53ef ] || continue
  h=$(dd if="$dev" bs=1 skip=1128 count=16 2>/dev/null | od -An -tx1 | tr -d ' \n')
  uuid=$(echo "$h" | sed 's/^\(.\{8\}\)\(.\{4\}\)\(.\{4\}\)\(.\{4\}\)\(.\{12\}\)$/\1-\2-\3-\4-\5/')
  ln -sf "$dev" "/dev/disk/by-uuid/$uuid"
done
echo "xrunrig LAVA ramdisk: $(uname -r), root shell on the console"
export PS1='/ # '
exec setsid cttyhack /bin/sh
INIT
chmod 755 "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$out"
echo "ramdisk: $out ($(wc -c <"$out") bytes, kernel modules for $rel)"
