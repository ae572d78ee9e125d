import ArgumentParser
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import RangeFetch

/// `rangefetch [get] URL`: the download.
struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Download a URL as parallel byte ranges (the default command).",
        discussion: """
        Bytes go to NAME.part beside the output, with a resume journal NAME.part.rfjournal. Running the same command again after Ctrl-C, a crash or a lost connection continues where it stopped, provided the server still has the same file (same size, ETag and Last-Modified); otherwise it starts over and says so.

        The real web: a signed redirect that expires midway (S3 presigned links, model hubs) is followed again from the URL you gave; a server that refuses connections (429, 503) gets fewer; a file replaced on the server while it downloads is fetched again whole (at most twice). -u and Authorization/Cookie headers go only to the URL's own host, never to a redirect target elsewhere.

        Examples:
          rangefetch https://example.com/big.iso          # into ./big.iso, -n auto
          rangefetch -n 16 -o /data/w.bin https://host/w  # 16 connections, this path
          rangefetch --json -q https://host/f | jq .      # machine-readable progress
        """
    )

    @Argument(help: "The http:// or https:// URL to download; several URLs make a batch (see -i). A local FILE.meta4 (or .metalink; Metalink 4, RFC 5854, or 3.0) downloads the file it describes: its URLs are the sources (best priority first, the rest mirrors), its size and hashes are checked (exit 5 on a mismatch), each piece with a piece hash is checked and a bad one fetched again from another source; the file takes the metalink's name (its last path component) unless -o is given. Several .meta4 files, or their paths in an -i list, make a batch. hf://ORG/NAME[@REV] (hf://datasets/…, hf://spaces/…) downloads a Hugging Face repository into the Hub's cache, each file checked against the Hub's listing; it prints the snapshot folder.")
    var urls: [String] = []

    @OptionGroup(title: "Batch options") var batch: BatchOptionGroup

    @OptionGroup(title: "Hugging Face repositories (hf://)") var hub: HubOptionGroup

    @Option(name: .customLong("max-connections-per-host"), help: ArgumentHelp("The most connections to any one host (scheme, host, port) at once: in a batch (default 16; for hf:// 64), and for each source of a file (default: no limit beyond -n; so mirrors on other hosts add connections). Example: --max-connections-per-host 8", valueName: "n"))
    var maxConnectionsPerHost: Int?

    @Option(name: .customLong("mirror"), help: ArgumentHelp("Another URL of the same file (repeatable; in an -i list, TAB-separated URLs on one line). Ranges are spread over the sources by their speed; a mirror must first serve the same size and the same bytes at sampled offsets, and one that disagrees, fails or is far slower is dropped with a warning. Without a checksum, each range a mirror sends is spot-checked against the main URL and a mirror caught sending other bytes is dropped and its ranges fetched again; only a checksum proves every byte. -u, Authorization and Cookie go to the main URL's host only (a mirror URL may carry its own user:password@). Example: --mirror https://eu.example.com/f.iso", valueName: "url"))
    var mirrors: [String] = []

    @Option(name: [.short, .customLong("output")], help: ArgumentHelp("Write to this path. A symbolic link is followed (the file it names gets the bytes). '-' means standard output, and a pipe, FIFO or device (/dev/null) is written into: ranges still arrive in parallel and go out in order, through a spool of at most --stream-window in $TMPDIR (else /var/tmp); a slow reader slows the download. A stream keeps no journal and cannot be resumed, and a --checksum is checked after the last byte, when the reader already has every byte (exit 5 on a mismatch). Example: -o /tmp/file.iso, or -o - | tar x", valueName: "path"))
    var output: String?

    @Option(name: .customLong("stream-window"), help: ArgumentHelp("With -o - or a pipe or device: how far ahead of the reader ranges may arrive (K/M/G, at least 1M; default 64M). Example: --stream-window 256M", valueName: "size"), transform: ByteCountArgument.streamWindow)
    var streamWindow: ByteCountArgument?

    @Option(name: [.short, .customLong("dir")], help: ArgumentHelp("Write into this directory, under the URL's last segment (-J: the server's name), or under -o NAME (aria2c's -d DIR -o NAME, curl's --output-dir). Example: -d ~/Downloads", valueName: "dir"))
    var directory: String?

    @Option(name: [.customShort("n"), .customLong("connections")], help: ArgumentHelp("Parallel TCP connections, one range each (also over HTTP/2, which could put them all on one): 'auto' (default) starts with 16 and doubles while the speed still grows, up to --max-connections; or a fixed count, 1 to 64, which becomes a maximum when the server refuses connections (429, 503). Example: -n 16", valueName: "n|auto"), transform: ConnectionCountArgument.parse)
    var connections = ConnectionCountArgument(count: .automatic)

    @Option(name: .customLong("max-connections"), help: ArgumentHelp("Upper bound for -n auto, 1 to 64 (default 64: behind a per-connection cap auto doubles past 16 while it pays); in a batch, the connections shared by all files (default 16, up to 1024; for hf:// 64, as the Hub's CDN caps each connection). Example: --max-connections 32", valueName: "n"))
    var maxConnectionsGiven: Int?

    /// --max-connections for a batch: the connections all its files share.
    var maxConnections: Int { maxConnectionsGiven ?? BatchOptions().maximumConnections }

    @Option(name: .customLong("min-segment"), help: ArgumentHelp("Never plan or split ranges below this size (K/M/G suffixes). By default ranges are planned no smaller than 1M, and near the end a busy range may be split down to 128K when that finishes sooner. Example: --min-segment 4M", valueName: "size"), transform: ByteCountArgument.minimumSegment)
    var minimumSegment: ByteCountArgument?

    @Flag(name: .customLong("keep-connections"), help: "Let each connection serve ranges for as long as it lasts. By default, once the path has lost packets and if round trips are short (up to about 60 ms), a connection that has served 2 s or more is replaced at its next range: with losses a fresh connection's slow start outruns the small window an old one settles at.")
    var keepConnections = false

    @Flag(name: .customLong("json"), help: "Print one JSON object per line on stdout (on stderr with -o -): probed, start, progress (≤4/s), retry, warning, verified, finish or error.")
    var json = false

    @Flag(name: [.short, .customLong("quiet")], help: "No progress bar or summary; errors still go to stderr.")
    var quiet = false

    @Flag(name: [.short, .customLong("verbose")], help: "Also print a line per finished or failed request on stderr: range, HTTP status, bytes, speed, retry number (a request object with --json); in a batch each line starts with its file. A stream (-o -, a pipe) also reports its time to the first byte on the output.")
    var verbose = false

    @OptionGroup var checks: ChecksumOptions

    @Option(name: .customLong("print-digest"), help: ArgumentHelp("After the download, print the file's digest in sha256sum format. Example: --print-digest sha256", valueName: "algo"),
            transform: DigestAlgorithmArgument.parse)
    var printDigest: DigestAlgorithmArgument?

    @Flag(name: .customLong("restart"), help: "Discard a partial download from an earlier run and start over.")
    var restart = false

    @Flag(name: .customLong("overwrite"), help: "Replace a file already at the output path.")
    var overwrite = false

    @Flag(name: [.short, .customLong("continue")], help: "Treat a file already at the output path as the first bytes of this download (curl's -C -, wget's -c). A partial download (NAME.part) resumes anyway.")
    var continueExisting = false

    @Flag(name: [.customShort("O"), .customLong("remote-name")], help: "Name the file after the last segment of the URL you gave, percent-decoded (a URL ending in / gives 'download'): the default without -o, as curl -O.")
    var remoteName = false

    @Flag(name: [.customShort("J"), .customLong("content-disposition")], help: "Trust the server with the file's name (curl's -J, wget's --content-disposition): the file name in its Content-Disposition header, else the last segment of the URL its redirects end at, else the URL's. A server's name is made safe: only its last path component, no control characters, leading dots removed (.bashrc is saved as bashrc), cut to 236 bytes keeping the extension. Without -J a server cannot choose the name.")
    var contentDisposition = false

    @Option(name: .customShort("x"), help: ArgumentHelp("aria2c's -x N: at most N connections to one host (for one file, at most N connections; in a batch, --max-connections-per-host N). A value that is not a number is curl's -x PROXY (--proxy). Example: -x 4", valueName: "n|proxy"), transform: PerHostOrProxyArgument.parse)
    var aria2MaxPerHost: PerHostOrProxyArgument?

    @Option(name: .customShort("s"), help: ArgumentHelp("aria2c's -s N: split the file over N connections (-n N). Example: -x 4 -s 8 gives 4 connections", valueName: "n"))
    var aria2Split: Int?

    @OptionGroup var network: NetworkOptions

    @Flag(name: .customLong("no-sign-request"), help: "For s3:// URLs of a public bucket: send requests unsigned (no credentials needed), as aws s3 --no-sign-request.")
    var noSignRequest = false

    @Option(name: .customLong("config"), help: ArgumentHelp("Read default options from this file instead of $XDG_CONFIG_HOME/rangefetch/config (else ~/.config/rangefetch/config): one option a line, its long name with or without dashes, then its value (connections 8, header Authorization: Bearer ...), # for comments. The command line wins. Example: --config ./ci.conf", valueName: "file"))
    var config: String?

    @Flag(name: .customLong("no-config"), help: "Read no config file.")
    var noConfig = false

    @Flag(name: .customLong("no-journal"), help: ArgumentHelp("Do not keep a resume journal (to measure its cost).", visibility: .hidden))
    var noJournal = false

    func validate() throws {
        if let output, directory != nil {
            // aria2c's -d DIR -o NAME and curl's --output-dir: the name goes inside the directory.
            if output == "-" { throw ValidationError("-o - writes to standard output; -d DIR does not apply") }
            if output.hasPrefix("/") { throw ValidationError("-o \(output) is an absolute path; with -d DIR give -o a name inside DIR (or drop -d)") }
        }
        if let output, output != "-", output.hasSuffix("/") {
            throw ValidationError("-o names a file, and \(output) ends in '/': use -d \(output) to save into that directory under the URL's name")
        }
        if output != nil && remoteName { throw ValidationError("use either -o PATH or -O (the URL's name), not both") }
        if output != nil && contentDisposition { throw ValidationError("use either -o PATH or -J (the server's name), not both") }
        if let aria2Split, !DownloadOptions.connectionRange.contains(aria2Split) {
            throw ValidationError("-s must be between 1 and 64 (got \(aria2Split))")
        }
        if overwrite && continueExisting { throw ValidationError("use either --overwrite or --continue, not both") }
        if quiet && verbose { throw ValidationError("use either -q/--quiet or -v/--verbose, not both") }
        if isHub {
            try validateHub()
        } else if hub.isGiven {
            throw ValidationError("--include, --exclude, --cache-dir, --local-dir and --force-download are for an hf:// repository (hf://ORG/NAME)")
        } else if isBatch {
            try validateBatch()
        } else {
            guard urls.count == 1 else {
                throw ValidationError("give the URL to download (or -i FILE for a list of them)")
            }
            if let maxConnectionsGiven, !DownloadOptions.connectionRange.contains(maxConnectionsGiven) {
                throw ValidationError("--max-connections must be between 1 and 64 (got \(maxConnectionsGiven))")
            }
        }
        try network.check()
    }

    func run() async throws {
        if isHub { return try await runHub() }
        if isBatch { return try await runBatch() }
        let reporter = Reporter(json: json, quiet: quiet, verbose: verbose, dataOnStandardOutput: output == "-")
        if network.insecure { reporter.handle(.warning(.certificatesUnchecked)) }
        do {
            try await download(reporter: reporter)
        } catch {
            let status = ExitStatus.code(for: error)
            reporter.fail(error, status: status)
            throw CommandFailure(status: status)
        }
    }

    /// Said once per run when `-k` (or `insecure` in a config file) turns TLS checks off.

    private func download(reporter: Reporter) async throws(DownloadError) {
            var options = try makeOptions()
            var url = urls[0]
            if SourceAddress.isMetalinkFile(url) {
                let metalink = try Metalink.load(path: url)
                for note in metalink.ignored { reporter.handle(.warning(.metalinkEntryIgnored(note: note))) }
                // A checksum file's entry names the file as it is saved: the metalink's name.
                options.checksums = try checks.expectedDigests(forFileNamed: output == nil ? metalink.name : expectedFileName)
                url = metalink.apply(to: &options)
            }
            let downloader = Downloader(options: options)
            reporter.waiting(for: url, options: options)
            let summary = try await Interrupts.cancelling { [url] () async throws(DownloadError) -> DownloadSummary in
                try await downloader.download(url) { reporter.handle($0) }
            }
            if let algorithm = printDigest?.algorithm {
                var digest = (summary.verified + summary.digests).first(where: { $0.algorithm == algorithm })
                if digest == nil, !summary.streamed {
                    digest = try await Downloader.digests(ofFileAt: summary.path, algorithms: [algorithm]).first
                }
                if let digest { reporter.printDigest(digest, path: summary.path) }
            }
            reporter.finish(summary)
    }

    func makeOptions() throws(DownloadError) -> DownloadOptions {
        var options = DownloadOptions()
        if output == "-" {
            options.destination = .standardOutput
        } else if let output {
            options.destination = .file(directory.map { ($0.hasSuffix("/") ? $0 : $0 + "/") + output } ?? output)
        } else if let directory {
            options.destination = .directory(directory)
        }
        options.nameSource = contentDisposition ? .server : .givenURL
        options.connections = aria2Split.map { .fixed($0) } ?? connections.count
        // A batch sets its own (GetBatch: the connections its files share).
        if let maxConnectionsGiven { options.maximumConnections = maxConnectionsGiven }
        // Per host: only when asked (a batch's default of 16 is in its budget), so -n 32 still
        // opens 32 connections to one server.
        if let perHost = aria2MaxPerHost?.perHost ?? maxConnectionsPerHost { options.maximumConnectionsPerHost = perHost }
        options.mirrors = mirrors
        if let perHost = aria2MaxPerHost?.perHost {
            // aria2c's -x: the most connections to one server, for one file as for a batch.
            options.maximumConnections = min(options.maximumConnections, perHost)
            if case .fixed(let count) = options.connections { options.connections = .fixed(min(count, perHost)) }
        }
        if let bytes = minimumSegment?.bytes {
            options.minimumSegmentBytes = bytes
            options.minimumSplitBytes = bytes
        }
        // A metalink's file is named by the metalink, once it is read (download(reporter:)).
        if !isBatch, !SourceAddress.isMetalinkFile(urls.first ?? "") {
            options.checksums = try checks.expectedDigests(forFileNamed: expectedFileName)
        }
        if let algorithm = printDigest?.algorithm { options.streamDigests = [algorithm] }
        if let bytes = streamWindow?.bytes { options.streamWindowBytes = bytes }
        options.resume = restart ? .restart : .resume
        options.existingFile = overwrite ? .overwrite : (continueExisting ? .continueFrom : .refuse)
        options.journal = !noJournal
        if keepConnections { options.recycleConnections = .never }
        try network.apply(to: &options)
        if let curlProxy = aria2MaxPerHost?.proxy, network.proxy == nil { options.request.proxy = curlProxy }
        if noSignRequest { options.s3 = try S3Configuration.load(unsigned: true) }
        return options
    }

    /// The name a checksum file's entry should have: the output's, else the URL's last segment
    /// (known before the server is asked, so also with -J).
    private var expectedFileName: String {
        if let output, output != "-" { return output.split(separator: "/").last.map(String.init) ?? output }
        return NameSource.nameFromURL(urls.first ?? "")
    }
}

/// `--checksum` and `--checksum-file`, shared by `get` and `verify`.
struct ChecksumOptions: ParsableArguments {
    @Option(name: .customLong("checksum"), help: ArgumentHelp("Expected digest ALGO=HEX (sha256, sha512, sha1, md5, or S3's crc32, crc32c, crc64nvme as big-endian hex; aria2's sha-256= works too). The file is moved into place only if it matches. Repeatable. Example: --checksum sha256=e3b0c442...", valueName: "algo=hex"))
    var checksums: [String] = []

    @Option(name: .customLong("checksum-file"), help: ArgumentHelp("A sha256sum/md5sum-style file; the entry naming the output file is used. Example: --checksum-file SHA256SUMS", valueName: "file"))
    var checksumFile: String?

    func validate() throws {
        for checksum in checksums {
            do { _ = try ChecksumSpec.parse(checksum) } catch { throw ValidationError(error.message) }
        }
    }

    func expectedDigests(forFileNamed name: String) throws(DownloadError) -> [DigestValue] {
        var digests = try checksums.map { (text) throws(DownloadError) in try ChecksumSpec.parse(text) }
        if let checksumFile {
            guard let text = try? String(contentsOfFile: checksumFile, encoding: .utf8) else {
                throw DownloadError.usage("cannot read checksum file \(checksumFile)")
            }
            guard let entry = try ChecksumSpec.entry(in: text, forFileNamed: name) else {
                throw DownloadError.usage("checksum file \(checksumFile) has no entry for \(name)")
            }
            digests.append(entry)
        }
        return digests
    }
}

/// Request options shared by everything that talks to a server.
struct NetworkOptions: ParsableArguments {
    @Option(name: [.customShort("H"), .customLong("header")], help: ArgumentHelp("Extra request header, repeatable. Example: -H 'Authorization: Bearer TOKEN'", valueName: "header"))
    var headers: [String] = []

    @Option(name: [.short, .customLong("user")], help: ArgumentHelp("Basic auth credentials (or put them in the URL). Not sent to other hosts after a redirect. Example: -u alice:secret", valueName: "user:password"))
    var user: String?

    @Option(name: [.customShort("A"), .customLong("user-agent")], help: ArgumentHelp("User-Agent header. Example: -A 'mytool/1.0'", valueName: "agent"))
    var userAgent: String?

    @Flag(name: [.customShort("k"), .customLong("insecure")], help: "Do not verify TLS certificates (dangerous).")
    var insecure = false

    @Option(name: .customLong("cacert"), help: ArgumentHelp("PEM file of CA certificates to trust. Example: --cacert ca.pem", valueName: "file"))
    var caCertificate: String?

    @Option(name: [.customLong("max-speed"), .customLong("limit-rate")], help: ArgumentHelp("Cap the total download speed (bytes/s, K/M/G suffixes); --limit-rate is the same (curl's and wget's name). Example: --max-speed 10M", valueName: "rate"), transform: ByteCountArgument.maximumSpeed)
    var maxSpeed: ByteCountArgument?

    @Option(name: .customLong("speed-limit"), help: ArgumentHelp("The lowest speed accepted (bytes/s, K/M suffixes; 0: none): a request that delivers less over a whole --speed-time window is aborted and retried on a fresh connection, and the download fails once its tries are spent. Requests running at once share it (16 connections: 1/16 each), and with --max-speed it is at most a quarter of that cap. Default 1K (curl's name; curl has none by default). Example: --speed-limit 10K", valueName: "rate"), transform: ByteCountArgument.speedLimit)
    var speedLimit: ByteCountArgument?

    @Option(name: .customLong("speed-time"), help: ArgumentHelp("Seconds over which --speed-limit is measured, from each request's start (default 30; a silent connection is given up after 30 s regardless). Example: --speed-time 60", valueName: "seconds"))
    var speedTime: Double = 30

    @Option(name: .customLong("proxy"), help: ArgumentHelp("Send every request through this proxy (http://, https://, socks5h://), instead of what http_proxy, https_proxy and all_proxy say; --proxy '' uses none. Example: --proxy http://proxy.lan:3128", valueName: "url"))
    var proxy: String?

    @Option(name: .customLong("proxy-header"), help: ArgumentHelp("Extra header for the proxy only, never the origin (curl's --proxy-header), repeatable: sent on the CONNECT of an https tunnel and with each request a plain http proxy forwards; not sent without a proxy. For a cache key hint or a Dragonfly tag. Example: --proxy-header 'X-Dragonfly-Tag: models'", valueName: "header"))
    var proxyHeaders: [String] = []

    @Option(name: .customLong("noproxy"), help: ArgumentHelp("Hosts to reach directly, not through the proxy (comma-separated, like no_proxy). Example: --noproxy localhost,.internal", valueName: "hosts"))
    var noProxy: String?

    @Flag(name: .customLong("netrc"), inversion: .prefixedNo, help: "Take a login for the host from ~/.netrc when the URL and -u give none (on by default, as wget2 and aria2c do).")
    var netrc = true

    @Option(name: .customLong("netrc-file"), help: ArgumentHelp("Read logins from this file instead of ~/.netrc. Example: --netrc-file ~/.config/netrc", valueName: "file"))
    var netrcFile: String?

    @Option(name: .customLong("resolve"), help: ArgumentHelp("Pin a host name and port to an address, like curl (repeatable). Example: --resolve cdn.example.com:443:203.0.113.7", valueName: "host:port:addr"))
    var resolve: [String] = []

    @Option(name: .customLong("connect-to"), help: ArgumentHelp("Connect to HOST2:PORT2 where a URL names HOST1:PORT1, like curl (repeatable; TLS still checks HOST1). Example: --connect-to cdn.example.com:443:edge7.example.net:443", valueName: "h1:p1:h2:p2"))
    var connectTo: [String] = []

    @Flag(name: .customShort("4"), help: "Resolve names to IPv4 addresses only.")
    var ipv4 = false

    @Flag(name: .customShort("6"), help: "Resolve names to IPv6 addresses only.")
    var ipv6 = false

    @Option(name: .customLong("connect-timeout"), help: ArgumentHelp("Seconds allowed to connect. Example: --connect-timeout 10", valueName: "seconds"))
    var connectTimeout: Int = 20

    @Option(name: .customLong("max-tries"), help: ArgumentHelp("Tries per range before giving up (retries continue from the last byte written). Example: --max-tries 10", valueName: "n"))
    var maxTries: Int = 5

    @Option(name: .customLong("retry-wait"), help: ArgumentHelp("Seconds before the first retry; doubles each time up to 16 s, with jitter. Example: --retry-wait 1", valueName: "seconds"))
    var retryWait: Double = 0.5

    func check() throws {
        for header in headers {
            if let problem = RequestOptions.headerProblem(header) { throw ValidationError("-H/--header \(problem)") }
        }
        for header in proxyHeaders {
            if let problem = RequestOptions.headerProblem(header) { throw ValidationError("--proxy-header \(problem)") }
        }
        guard speedTime >= 1 && speedTime <= 3600 else { throw ValidationError("--speed-time must be between 1 and 3600 seconds") }
        if ipv4 && ipv6 { throw ValidationError("use either -4 or -6, not both") }
        for entry in resolve where entry.split(separator: ":", omittingEmptySubsequences: false).count < 3 {
            throw ValidationError("--resolve takes HOST:PORT:ADDRESS (got '\(entry)')")
        }
        for entry in connectTo where entry.split(separator: ":", omittingEmptySubsequences: false).count != 4 {
            throw ValidationError("--connect-to takes HOST1:PORT1:HOST2:PORT2, parts may be empty (got '\(entry)')")
        }
        if let netrcFile, !FileManager.default.isReadableFile(atPath: netrcFile) {
            throw ValidationError("--netrc-file \(netrcFile) is not a readable file")
        }
        guard (1...600).contains(connectTimeout) else { throw ValidationError("--connect-timeout must be between 1 and 600 seconds") }
        guard (1...100).contains(maxTries) else { throw ValidationError("--max-tries must be between 1 and 100") }
        guard retryWait >= 0 && retryWait <= 600 else { throw ValidationError("--retry-wait must be between 0 and 600 seconds") }
        if let caCertificate, !FileManager.default.isReadableFile(atPath: caCertificate) {
            throw ValidationError("--cacert \(caCertificate) is not a readable file")
        }
    }

    func apply(to options: inout DownloadOptions) throws(DownloadError) {
        options.request.headers = headers
        options.request.credentials = user
        if let userAgent { options.request.userAgent = userAgent }
        options.request.insecure = insecure
        CertificateAuthorities.apply(cacert: caCertificate, to: &options.request)
        options.request.proxy = proxy
        options.request.proxyHeaders = proxyHeaders
        options.request.noProxy = noProxy
        options.request.netrc = netrc || netrcFile != nil
        options.request.netrcFile = netrcFile
        options.request.resolve = resolve
        options.request.connectTo = connectTo
        options.request.ipVersion = ipv4 ? .v4 : ipv6 ? .v6 : .any
        options.request.maximumBytesPerSecond = maxSpeed?.bytes
        options.request.connectTimeoutSeconds = connectTimeout
        options.request.lowSpeed = LowSpeedRule(bytesPerSecond: speedLimit?.bytes ?? 1024, windowSeconds: speedTime)
        options.retry = RetryPolicy(maximumTries: maxTries, baseDelaySeconds: retryWait)
    }
}

extension DownloadError {
    static func usage(_ message: String) -> DownloadError {
        DownloadError(usageMessage: message)
    }
}
