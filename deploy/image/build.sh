#!/usr/bin/env bash
# Build kubetide's OCI image without a Docker daemon: a Debian root filesystem from Debian
# packages (mmdebstrap), kubetide's wheel and its dependencies from requirements/ci.lock with
# hashes, packed as an OCI image (umoci). Run as root (mmdebstrap and umoci keep file owners).
#
#   deploy/image/build.sh [OUT_DIR]          # OUT_DIR defaults to ./build/image
#   deploy/image/build.sh --update-pins      # rewrite deploy/image/debian-packages.lock
#
# Writes OUT_DIR/oci (an OCI image layout, tag = kubetide's version), OUT_DIR/kubetide.oci.tar
# (the same layout as one archive: `docker load`, `ctr image import`, `skopeo copy`) and
# OUT_DIR/debian-packages.lock (the Debian packages installed, also in the image at
# /usr/share/kubetide/debian-packages.lock). Needs
# mmdebstrap, umoci, python3 with pip, and network access to the Debian mirror and PyPI
# (Debian: `apt-get install -y mmdebstrap umoci python3-pip`). See docs/install.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
pins="$here/debian-packages.lock"
update_pins=false
if [ "${1:-}" = "--update-pins" ]; then
    update_pins=true
    shift
fi
out=$(mkdir -p "${1:-$root/build/image}" && cd "${1:-$root/build/image}" && pwd)
python=${PYTHON:-python3}

# Every input of the build is fixed here or in the lock files: the Debian release and mirror,
# the time stamped on every file and on the image, the packages' versions (checked below).
DEBIAN_SUITE=bookworm
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DEBIAN_SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
# Debian 12's python3 is 3.11: the wheels chosen from the lock are cp311 manylinux x86_64 ones.
PYTHON_VERSION=3.11
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1767225600}  # 2026-01-01T00:00:00Z
UID_GID=65532:65532
version=$(cd "$root" && "$python" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')

for tool in mmdebstrap umoci; do
    command -v "$tool" >/dev/null || { echo "build.sh: $tool not found (apt-get install -y mmdebstrap umoci)" >&2; exit 2; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/kubetide-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"

# 1. The Debian base: Essential packages, python3 (with its standard library), the CA
# certificates and libstdc++ (which manylinux wheels such as numpy's link against), nothing else:
# no apt, no shell tools beyond Essential, no docs or locales.
# The suites' package indices stay in the root filesystem for step 2 (removed in step 4).
mmdebstrap --quiet --variant=essential --mode=root --skip=cleanup/apt/lists \
    --include=python3,ca-certificates,libstdc++6 \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    "$DEBIAN_SUITE" "$rootfs" \
    "deb $DEBIAN_MIRROR $DEBIAN_SUITE main" \
    "deb $DEBIAN_MIRROR $DEBIAN_SUITE-updates main" \
    "deb $DEBIAN_SECURITY_MIRROR $DEBIAN_SUITE-security main"

# 2. The packages' versions against the pins (deploy/image/debian_pins.py has the policy). Debian
# keeps one version per suite, so a pin is superseded within days by a security update or a point
# release of the same release: the image takes the update and the build says so, a line a pin
# ("pin X 1.2-3 superseded by 1.2-3+deb12u1 (bookworm-security)"). Anything that is not an update
# of the pinned release (another release, an older version, a package added or gone) stops the
# build with one line each. What was installed is recorded in the image and next to it.
installed="$work/installed.txt"
record="$work/debian-packages.lock"
chroot "$rootfs" dpkg-query -W -f '${Package}=${Version}\n' | LC_ALL=C sort >"$installed"
: >"$work/superseded.txt"
check=("$python" "$here/debian_pins.py" "$pins" "$rootfs/var/lib/apt/lists" "$installed" "$DEBIAN_SUITE" "$record")
if $update_pins; then
    "${check[@]}" --update || exit 2
    cp "$record" "$pins"
    echo "build.sh: wrote $pins ($(grep -vc '^#' "$pins") packages)"
else
    "${check[@]}" | tee "$work/superseded.txt" || exit 2
fi
mkdir -p "$rootfs/usr/share/kubetide"
cp "$record" "$rootfs/usr/share/kubetide/debian-packages.lock"
# The pins that moved, as one OCI label ("package=version,..."; "none" when none did).
superseded=$(sed -n 's/^build\.sh: pin \([^ ]*\) [^ ]* superseded by \([^ ]*\) .*/\1=\2/p' "$work/superseded.txt" | paste -sd, -)

# 3. kubetide's dependencies, exactly as locked (versions and hashes), as cp311 wheels only:
# pip runs outside the image and writes into it, so no pip is left inside.
site="$rootfs/usr/local/lib/python$PYTHON_VERSION/dist-packages"
"$python" "$here/runtime_requirements.py" "$root/requirements/ci.lock" "$root/pyproject.toml" >"$work/runtime.lock"
platforms=()
for minor in $(seq 17 36); do platforms+=(--platform "manylinux_2_${minor}_x86_64"); done
platforms+=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform linux_x86_64)
pip_target=(--quiet --disable-pip-version-check --no-cache-dir --no-compile --no-deps
    --target "$site" --python-version "$PYTHON_VERSION" --implementation cp --abi "cp${PYTHON_VERSION/./}"
    --only-binary=:all: "${platforms[@]}")
"$python" -m pip install "${pip_target[@]}" --require-hashes -r "$work/runtime.lock"
# kubetide itself, from the wheel of this checkout.
"$python" -m pip wheel --quiet --disable-pip-version-check --no-cache-dir --no-deps \
    --wheel-dir "$work/wheel" "$root"
"$python" -m pip install "${pip_target[@]}" "$work"/wheel/kubetide-*.whl
rm -rf "$site/bin"  # console scripts with the build host's interpreter; ours is below
cat >"$rootfs/usr/local/bin/kubetide" <<'SCRIPT'
#!/usr/bin/python3 -I
import sys

from kubetide.cli.main import main

sys.exit(main())
SCRIPT
chmod 0755 "$rootfs/usr/local/bin/kubetide"
# Bytecode compiled by the image's own interpreter, hashed rather than time-stamped, so that the
# read-only root never needs a write and two builds give the same bytes.
chroot "$rootfs" /usr/bin/python3 -m compileall -q -j 0 --invalidation-mode unchecked-hash \
    "/usr/local/lib/python$PYTHON_VERSION/dist-packages" >/dev/null

# 4. The user the Deployment names (runAsUser 65532), and no state from the build.
echo "kubetide:x:65532:65532:kubetide:/nonexistent:/usr/sbin/nologin" >>"$rootfs/etc/passwd"
echo "kubetide:x:65532:" >>"$rootfs/etc/group"
rm -rf "$rootfs"/var/cache/* "$rootfs"/var/log/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/tmp/* \
    "$rootfs"/etc/machine-id "$rootfs"/etc/hostname "$rootfs"/etc/resolv.conf
: >"$rootfs/etc/machine-id"
chmod 1777 "$rootfs/tmp"
find "$rootfs" -newermt "@$SOURCE_DATE_EPOCH" -print0 | xargs -0r touch --no-dereference --date="@$SOURCE_DATE_EPOCH"

# 5. The OCI image: one layer holding the root filesystem, and the config the Deployment expects.
oci="$work/oci"
created=$(date --utc --date="@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
umoci init --layout "$oci"
umoci new --image "$oci:$version"
umoci unpack --image "$oci:$version" "$work/bundle" >/dev/null
rmdir "$work/bundle/rootfs"
mv "$rootfs" "$work/bundle/rootfs"
umoci repack --image "$oci:$version" --history.created "$created" --history.created_by "deploy/image/build.sh" \
    "$work/bundle"
umoci config --image "$oci:$version" --created "$created" --history.created "$created" \
    --history.created_by "deploy/image/build.sh" --os linux --architecture amd64 \
    --config.user "$UID_GID" --config.workingdir / \
    --config.entrypoint /usr/local/bin/kubetide --config.cmd run \
    --config.env PATH=/usr/local/bin:/usr/bin:/bin \
    --config.env PYTHONDONTWRITEBYTECODE=1 --config.env PYTHONUNBUFFERED=1 \
    --config.exposedports 8085/tcp \
    --config.label "org.opencontainers.image.version=$version" \
    --config.label "org.opencontainers.image.source=https://github.com/kubetide/kubetide" \
    --config.label "io.kubetide.debian.release=$DEBIAN_SUITE" \
    --config.label "io.kubetide.debian.packages=/usr/share/kubetide/debian-packages.lock" \
    --config.label "io.kubetide.debian.superseded-pins=${superseded:-none}"
umoci gc --layout "$oci"

rm -rf "$out/oci"
cp -a "$oci" "$out/oci"
cp "$record" "$out/debian-packages.lock"
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
    -C "$oci" -cf "$out/kubetide.oci.tar" .
manifest=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' "$oci/index.json")
echo "build.sh: $out/kubetide.oci.tar (tag $version, manifest $manifest)"
