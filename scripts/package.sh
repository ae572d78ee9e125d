#!/usr/bin/env bash
# Builds rangefetch for machines without Swift: a release binary with the Swift runtime linked in
# (--static-swift-stdlib), a Debian package of it and a .tar.gz of the same files.
#
#   scripts/package.sh            build, package, then check the .deb (install, download, remove)
#   PACKAGE_CHECK=0 scripts/package.sh   build and package only
#
# Writes dist/rangefetch_VERSION_ARCH.deb and dist/rangefetch-VERSION-linux-ARCH.tar.gz; the
# version is the one `rangefetch --version` prints (RangeFetchVersion.string). The package holds
#   /usr/bin/rangefetch
#   /usr/share/man/man1/rangefetch.1.gz
#   /usr/share/bash-completion/completions/rangefetch
#   /usr/share/zsh/vendor-completions/_rangefetch
#   /usr/share/fish/vendor_completions.d/rangefetch.fish
#   /usr/share/doc/rangefetch/{README.md,copyright}
#   /usr/share/doc/rangefetch/docs/*.md (the pages the README links), events.schema.json
# and Depends: on the Debian packages that own the shared libraries the binary links (from ldd).
# The check installs the .deb, downloads 256 MiB from a local nginx with `env -i PATH=/usr/bin:/bin`
# (no Swift anywhere on the path), finds the man page and the completion, and removes it again.
# The .deb's path is the last line printed.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/packages.sh
source scripts/lib/nginx.sh
rf_base_packages
rf_need_packages dpkg-dev binutils man-db gzip
rf_require_swift

swift build -c release --product rangefetch --static-swift-stdlib >&2
binary="$(swift build -c release --show-bin-path)/rangefetch"
version=$("$binary" --version)
arch=$(dpkg --print-architecture)
if ldd "$binary" | grep -Eq 'libswift|libFoundation|libdispatch'; then
    echo "package: $binary still links the Swift runtime dynamically:" >&2
    ldd "$binary" | grep -E 'libswift|libFoundation|libdispatch' >&2
    exit 1
fi

dist=dist
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
stage=$root/rangefetch
install -D -m 0755 "$binary" "$stage/usr/bin/rangefetch"
strip --strip-unneeded "$stage/usr/bin/rangefetch"
install -d "$stage/usr/share/man/man1"
gzip -9n -c docs/rangefetch.1 >"$stage/usr/share/man/man1/rangefetch.1.gz"
install -d "$stage/usr/share/bash-completion/completions" "$stage/usr/share/zsh/vendor-completions" \
    "$stage/usr/share/fish/vendor_completions.d" "$stage/usr/share/doc/rangefetch"
"$binary" --generate-completion-script bash >"$stage/usr/share/bash-completion/completions/rangefetch"
"$binary" --generate-completion-script zsh >"$stage/usr/share/zsh/vendor-completions/_rangefetch"
"$binary" --generate-completion-script fish >"$stage/usr/share/fish/vendor_completions.d/rangefetch.fish"
install -m 0644 README.md "$stage/usr/share/doc/rangefetch/README.md"
install -m 0644 LICENSE "$stage/usr/share/doc/rangefetch/copyright"
chmod 0644 "$stage"/usr/share/*/*/* "$stage"/usr/share/*/*/*/* 2>/dev/null || true
# The README links the pages under docs/ (docs/usage.md, …): beside it, its links work.
install -d "$stage/usr/share/doc/rangefetch/docs"
install -m 0644 docs/*.md docs/events.schema.json "$stage/usr/share/doc/rangefetch/docs/"

# Depends: the packages owning the shared libraries the binary itself names (ELF NEEDED, found
# where ldd resolves them; theirs depend on the rest), the C library set aside.
needed=$(objdump -p "$stage/usr/bin/rangefetch" | awk '/NEEDED/{print $2}')
depends=$(for name in $needed; do
    lib=$(ldd "$stage/usr/bin/rangefetch" | awk -v n="$name" '$1 == n {print $3}')
    if [ -n "$lib" ]; then dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null || true; fi
done | cut -d: -f1 | sort -u | grep -v '^libc6$' | while read -r pkg; do
    ver=$(dpkg-query -W -f='${Version}' "$pkg" | sed 's/-[^-]*$//')
    echo "$pkg (>= ${ver%%+*})"
done | paste -sd, - | sed 's/,/, /g')
# libxml2 is opened at run time (dlopen) for S3's XML answers, so no NEEDED entry names it.
depends="libc6, ${depends}, libxml2"

install -d "$stage/DEBIAN"
size_kib=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat >"$stage/DEBIAN/control" <<CONTROL
Package: rangefetch
Version: $version
Architecture: $arch
Maintainer: rangefetch developers <rangefetch@localhost>
Installed-Size: $size_kib
Depends: $depends
Section: net
Priority: optional
Homepage: https://github.com/rangefetch/rangefetch
Description: fast, resumable, verified HTTP(S) and S3 downloads over parallel ranges
 rangefetch splits a file into byte ranges and fetches them over parallel TCP
 connections (HTTP/1.1 and HTTP/2) straight into a sparse file, with a
 crash-safe journal so an interrupted download resumes, digests checked as the
 bytes arrive, s3:// keys and prefixes, mirrors, batches and streaming to a pipe.
CONTROL
mkdir -p "$dist"
deb="$dist/rangefetch_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$stage" "$deb" >&2
tarball="$dist/rangefetch-${version}-linux-${arch}.tar.gz"
tar -C "$stage" --exclude=DEBIAN --owner=0 --group=0 -czf "$tarball" usr
echo "package: $tarball (the same files for other distributions; unpack into / or a prefix)" >&2

if [ "${PACKAGE_CHECK:-1}" != 0 ]; then
    if dpkg -s rangefetch >/dev/null 2>&1; then
        echo "package: rangefetch is installed already; skipping the install check" >&2
    else
        check=$(mktemp -d /var/tmp/rangefetch-package-check.XXXXXX)
        nginx_port=$(rf_free_port)
        cleanup_check() { rf_nginx_stop "$check/nginx"; dpkg -r rangefetch >/dev/null 2>&1 || true; rm -rf "$check" "$root"; }
        trap cleanup_check EXIT
        mkdir -p "$check/www"
        head -c $((256 << 20)) /dev/urandom >"$check/www/file.bin"
        rf_nginx_start "$check/nginx" "$nginx_port" "$check/www"
        dpkg -i "$deb" >&2
        env -i PATH=/usr/bin:/bin rangefetch -q -n 8 -o "$check/file.bin" "http://127.0.0.1:$nginx_port/file.bin"
        cmp "$check/file.bin" "$check/www/file.bin"
        [ "$(command -v rangefetch)" = /usr/bin/rangefetch ]
        ! ldd /usr/bin/rangefetch | grep -Eq 'libswift|libFoundation|libdispatch'
        man -w rangefetch >/dev/null
        [ -f /usr/share/bash-completion/completions/rangefetch ]
        [ -f /usr/share/doc/rangefetch/docs/usage.md ]
        dpkg -r rangefetch >&2
        if [ -e /usr/bin/rangefetch ] || [ -e /usr/share/man/man1/rangefetch.1.gz ] \
            || [ -e /usr/share/bash-completion/completions/rangefetch ] || dpkg -L rangefetch >/dev/null 2>&1; then
            echo "package: dpkg -r left files behind" >&2
            exit 1
        fi
        echo "package: checked: installed, downloaded 256 MiB exactly with an empty environment, man page and completion found, removed cleanly" >&2
    fi
fi
echo "$deb"
