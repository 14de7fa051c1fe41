# Shared by scripts/demo, scripts/test and scripts/build: install what is missing, then build.
# Sourced, not run. Idempotent and quiet when everything is already there.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${ONNXGPU_BUILD_DIR:-$ROOT/build}
CACHE_DIR=${ONNXGPU_CACHE_DIR:-$ROOT/.cache}

# Dawn (WebGPU) from npm, pinned and integrity-checked.
DAWN_PKG=bun-webgpu-linux-x64
DAWN_VERSION=0.1.7
DAWN_INTEGRITY=sha512-UEP7UZdEhx9otvkZczjsszL8ZVlrODANQvgl+C88/bNVmxDoFi7w1fWzGi1sZyakiETjmtFDq2/xCLhbSZxjqw==
DAWN_DIR=$CACHE_DIR/dawn-$DAWN_VERSION
DAWN_LIB=$DAWN_DIR/libwebgpu_wrapper.so

log() { echo "[onnxgpu] $*" >&2; }
die() { echo "[onnxgpu] error: $*" >&2; exit 1; }

sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

ensure_apt_packages() {
  local missing=() name prefix ver
  while read -r name prefix; do
    case "$name" in ''|'#'*) continue ;; esac
    ver=$(dpkg-query -W -f='${db:Status-Status} ${Version}' "$name" 2>/dev/null || true)
    if [ "${ver%% *}" != installed ]; then missing+=("$name"); fi
  done < "$ROOT/scripts/deps.txt"
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing Debian packages: ${missing[*]}"
    sudo_if_needed apt-get update -qq || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive sudo_if_needed apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
      || die "apt-get install ${missing[*]} failed"
  fi
  while read -r name prefix; do
    case "$name" in ''|'#'*) continue ;; esac
    [ -n "$prefix" ] || continue
    ver=$(dpkg-query -W -f='${Version}' "$name")
    case "$ver" in "$prefix"*) ;; *) die "$name is $ver, expected $prefix* (see scripts/deps.txt)" ;; esac
  done < "$ROOT/scripts/deps.txt"
}

ensure_npm() {
  command -v npm >/dev/null && return 0
  log "installing npm"
  DEBIAN_FRONTEND=noninteractive sudo_if_needed apt-get install -y -qq --no-install-recommends npm >/dev/null || die "cannot install npm"
}

# Fetch the Dawn tarball with `npm pack`, check it against the pinned sha512, unpack libwebgpu_wrapper.so.
ensure_dawn() {
  [ -s "$DAWN_LIB" ] && [ -f "$DAWN_DIR/.verified" ] && return 0
  ensure_npm
  mkdir -p "$CACHE_DIR"
  local tmp; tmp=$(mktemp -d "$CACHE_DIR/.dawn.XXXXXX")
  log "fetching Dawn: npm pack $DAWN_PKG@$DAWN_VERSION"
  (cd "$tmp" && npm pack "$DAWN_PKG@$DAWN_VERSION" --silent >/dev/null) || { rm -rf "$tmp"; die "npm pack $DAWN_PKG@$DAWN_VERSION failed"; }
  local tgz="$tmp/$DAWN_PKG-$DAWN_VERSION.tgz"
  local got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  if [ "$got" != "$DAWN_INTEGRITY" ]; then rm -rf "$tmp"; die "Dawn tarball integrity mismatch: got $got"; fi
  tar -xzf "$tgz" -C "$tmp" package/libwebgpu_wrapper.so package/LICENSE
  mkdir -p "$DAWN_DIR"
  mv "$tmp/package/libwebgpu_wrapper.so" "$DAWN_LIB"
  mv "$tmp/package/LICENSE" "$DAWN_DIR/LICENSE"
  echo "$DAWN_INTEGRITY" > "$DAWN_DIR/.verified"
  rm -rf "$tmp"
  log "Dawn $DAWN_VERSION verified and unpacked in $DAWN_DIR"
}

# The engine finds a GPU's Vulkan driver, or SwiftShader's (from chromium) when there is none, by itself:
# the tests run with the environment a user has. XDG_RUNTIME_DIR silences a loader warning.
setup_vulkan_env() {
  export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
}

ensure_deps() { ensure_apt_packages; ensure_dawn; }

build() {
  export CCACHE_DIR=${CCACHE_DIR:-$CACHE_DIR/ccache} CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=1
  local buildtype=${ONNXGPU_BUILD_TYPE:-RelWithDebInfo}
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$buildtype" \
      -DONNXGPU_DAWN_LIB="$DAWN_LIB" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null || die "cmake configure failed"
  fi
  cmake --build "$BUILD_DIR" -- ${ONNXGPU_NINJA_FLAGS:-} || die "build failed"
}
