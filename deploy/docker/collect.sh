#!/bin/sh
# collect.sh BINARY ROOT - the root filesystem of a runtime image in ROOT:
# BINARY in /usr/local/bin, every shared library ldd finds for it (and the
# dynamic loader) at the path ldd names, the CA bundle, /etc/passwd and
# /etc/group with the user and group 65532 ("tailor"), /etc/nsswitch.conf
# (glibc 2.36 has the files and dns lookups built in: no libnss_* needed)
# and an empty /tmp (mode 1777).  Runs in the image's collect stage.
set -eu
bin=$1
root=$2
mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs"
cp "$bin" "$root/usr/local/bin/"
# "libx.so.1 => /lib/.../libx.so.1 (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)";
# linux-vdso has no file.
ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
  sort -u | while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/sbin/nologin\ntailor:x:65532:65532:tailor:/nonexistent:/sbin/nologin\n' \
  >"$root/etc/passwd"
printf 'root:x:0:\ntailor:x:65532:\n' >"$root/etc/group"
# /etc/hosts first (the runtime mounts it, and /etc/resolv.conf), then DNS.
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$root/etc/nsswitch.conf"
mkdir -p "$root/tmp"
chmod 1777 "$root/tmp"
