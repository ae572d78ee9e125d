#!/usr/bin/env bash
# Regenerates docs/rangefetch.1 from the CLI's own help (swift-argument-parser's generate-manual
# tool, built offline from the resolved dependency), then turns blank lines into paragraph breaks
# and indented example lines into literal blocks so `man` keeps them one per line.
# Run after changing any help text; commit the result.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/packages.sh
rf_require_swift
swift build --product rangefetch >/dev/null
swift build --product generate-manual >/dev/null
bin=$(swift build --show-bin-path)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
date=${RANGEFETCH_MAN_DATE:-$(git log -1 --format=%cs 2>/dev/null || date +%F)}
tool="$bin/generate-manual-tool"; [ -x "$tool" ] || tool="$bin/generate-manual"
"$tool" "$bin/rangefetch" --date "$date" --output-directory "$work" >/dev/null
python3 - "$work/rangefetch.1" docs/rangefetch.1 <<'PY'
import sys
source, target = sys.argv[1], sys.argv[2]
out, literal = [], False
for line in open(source, encoding="utf-8").read().split("\n"):
    example = line.startswith("  ") and not line.startswith(".")
    if example and not literal:
        out.append(".Bd -literal -offset indent")
        literal = True
    elif not example and literal:
        out.append(".Ed")
        literal = False
    if example:
        out.append(line.strip().replace("\\", "\\e"))
    elif line == "":
        out.append(".Pp")
    else:
        out.append(line)
if literal:
    out.append(".Ed")
while out and out[-1] in ("", ".Pp"):
    out.pop()
text = "\n".join(out)
while ".Pp\n.Pp" in text:
    text = text.replace(".Pp\n.Pp", ".Pp")

# The generator's SYNOPSIS shows only "rangefetch [subcommand]": say what people type.
synopsis = """.Sh SYNOPSIS
.Nm
.Op Ar options
.Ar URL
.Op Ar URL ...
.Nm
.Op Ar options
.Fl i Ar list
.Nm
.Op Ar options
.Cm s3:// Ns Ar bucket Ns / Ns Ar prefix Ns /
.Nm
.Cm bench
.Op Ar options
.Ar URL
.Nm
.Cm verify
.Ar file
.Op Ar options
"""
start = text.index(".Sh SYNOPSIS")
text = text[:start] + synopsis + text[text.index(".Sh DESCRIPTION"):]

exit_status = """.Sh EXIT STATUS
.Bl -tag -width 4n
.It 0
The complete (and, where given, verified) file is at its final path, or already was.
.It 1
Another failure.
.It 2
Usage: a bad URL, option, list line or config file line; a file already at the output path.
.It 3
Network or HTTP: DNS, connect, TLS, 4xx and 5xx answers, a server breaking the range protocol, a file that changed on the server, an S3 refusal.
.It 4
File system: a directory that cannot be created or written, a full disk, a file locked by another rangefetch, a reader that closed the pipe.
.It 5
A checksum mismatch (the bytes are kept as NAME.checksum-mismatch; for a stream, the reader has them).
.It 130
Interrupted (Ctrl-C, SIGTERM): run the same command again to resume.
.El
.Sh ENVIRONMENT
.Bl -tag -width Ds
.It Ev http_proxy , https_proxy , all_proxy , no_proxy
Proxies, as curl reads them; --proxy and --noproxy win.
.It Ev CURL_CA_BUNDLE , SSL_CERT_FILE , SSL_CERT_DIR
CA certificates to trust when --cacert is not given: the bundles both file variables name, and the hashed directory SSL_CERT_DIR names.
.It Ev AWS_ACCESS_KEY_ID , AWS_SECRET_ACCESS_KEY , AWS_SESSION_TOKEN
Credentials for s3:// URLs.
.It Ev AWS_REGION , AWS_DEFAULT_REGION , AWS_PROFILE , AWS_ENDPOINT_URL , AWS_ENDPOINT_URL_S3
Region, profile and an S3-compatible store's endpoint (path-style).
.It Ev AWS_SHARED_CREDENTIALS_FILE , AWS_CONFIG_FILE
Where the profile files are, instead of ~/.aws.
.It Ev XDG_CONFIG_HOME
Where the config file is (rangefetch/config), else ~/.config.
.It Ev TMPDIR
Where a stream's spool goes (-o -, pipes, devices), else /var/tmp.
.It Ev COLUMNS , NO_COLOR
The terminal width for the bar; no bold text.
.It Ev MALLOC_ARENA_MAX
Overrides rangefetch's own limit of two malloc arenas.
.El
.Sh FILES
.Bl -tag -width Ds
.It Pa NAME.part
The bytes of a download in progress, renamed to NAME once complete and verified.
.It Pa NAME.part.rfjournal
What of NAME.part is durably on disk, so a rerun resumes (see docs/journal-format.md).
.It Pa NAME.checksum-mismatch
The bytes of a download whose digest did not match.
.It Pa ~/.config/rangefetch/config
Default options, one a line (--config, --no-config).
.It Pa ~/.netrc
Logins per host (--netrc-file, --no-netrc).
.It Pa ~/.aws/credentials , ~/.aws/config
S3 credentials, region and endpoint per profile.
.El
.Sh SEE ALSO
.Xr curl 1 ,
.Xr wget2 1 ,
.Xr aria2c 1 ,
.Xr axel 1 ,
.Xr sha256sum 1
"""
start = text.index('.Sh "EXIT STATUS"')
text = text[:start] + exit_status
open(target, "w", encoding="utf-8").write(text + "\n")
PY
echo "wrote docs/rangefetch.1"
