import ArgumentParser
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import RangeFetch

/// `rangefetch verify FILE`: check (or print) a file's digests.
struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a file on disk against a checksum, or print its digest.",
        usage: "rangefetch verify <file> ... [<options>]\n  rangefetch verify --checksum-file SUMS",
        discussion: """
        Exits 0 when every given digest matches, 5 on a mismatch, 4 when a file cannot be read.

        Several files are each checked against their entry in --checksum-file (or each printed with --print-digest); with --checksum-file alone, every entry in it is checked, its names read from the current directory, as sha256sum -c does. Every file is checked even after one fails; the exit status is 5 if any did not match.

        With --metalink, the file's size, whole-file hashes and every piece hash in the .meta4 are \
        checked; bad pieces are listed with their byte ranges (exit 5). --repair then fetches only \
        those pieces' byte ranges from the metalink's URLs (each in turn), writes each into the \
        file once its hash matches, and checks the whole file again: exit 0 only if it is exact. \
        A file of another size is never repaired (download it again).

        Examples:
          rangefetch verify big.iso --checksum sha256=9f86d081…
          rangefetch verify big.iso --checksum-file SHA256SUMS
          rangefetch verify --checksum-file SHA256SUMS          # every entry, like sha256sum -c
          rangefetch verify big.iso --print-digest sha256      # like sha256sum, but faster
          rangefetch verify big.iso --metalink big.iso.meta4 --repair
        """
    )

    @Argument(help: "The files to check (none with --checksum-file: every file it names).")
    var files: [String] = []

    @OptionGroup var checks: ChecksumOptions

    @Option(name: .customLong("print-digest"), help: ArgumentHelp("Print the file's digest in sha256sum format. Example: --print-digest md5", valueName: "algo"), transform: DigestAlgorithmArgument.parse)
    var printDigest: DigestAlgorithmArgument?

    @Option(name: .customLong("metalink"), help: ArgumentHelp("Check the file's size, hashes and piece hashes against this Metalink 4 file. Example: --metalink big.iso.meta4", valueName: "file.meta4"))
    var metalink: String?

    @Flag(name: .customLong("repair"), help: "With --metalink: fetch again only the pieces that do not match, from the metalink's URLs, and write them into the file.")
    var repair = false

    @OptionGroup(title: "Network options (for --repair)") var network: NetworkOptions

    func validate() throws {
        try network.check()
        if repair && metalink == nil {
            throw ValidationError("--repair needs --metalink F.meta4 (the piece hashes and URLs to repair from)")
        }
        if checks.checksums.isEmpty && checks.checksumFile == nil && printDigest == nil && metalink == nil {
            throw ValidationError("give --checksum, --checksum-file, --print-digest or --metalink")
        }
        if files.isEmpty && (checks.checksumFile == nil || !checks.checksums.isEmpty || printDigest != nil || metalink != nil) {
            throw ValidationError("give the file to check (or --checksum-file SUMS alone to check every file it names)")
        }
        if files.count > 1 && metalink != nil { throw ValidationError("--metalink checks one file") }
        if files.count > 1 && !checks.checksums.isEmpty {
            throw ValidationError("--checksum is one file's digest; for several files use --checksum-file")
        }
    }

    func run() async throws {
        let reporter = Reporter(json: false, quiet: false)
        var targets: [(file: String, expected: [DigestValue]?)] = files.map { ($0, nil) }
        if files.isEmpty {
            do {
                targets = try everyEntry()
            } catch {
                let status = ExitStatus.code(for: error)
                reporter.fail(error, status: status)
                throw CommandFailure(status: status)
            }
        }
        var failures: [Int32] = []
        for target in targets {
            do {
                try await check(target.file, expected: target.expected)
            } catch {
                let status = ExitStatus.code(for: error)
                reporter.fail(error, status: status)
                failures.append(status)
            }
        }
        guard let first = failures.first else { return }
        if targets.count > 1 {
            writeOut("rangefetch: \(failures.count) of \(targets.count) files did not pass\n", to: STDERR_FILENO)
        }
        throw CommandFailure(status: failures.contains(ExitStatus.checksum) ? ExitStatus.checksum : first)
    }

    /// `--checksum-file` alone: every file it names, with its digest, as `sha256sum -c` reads it.
    private func everyEntry() throws(DownloadError) -> [(file: String, expected: [DigestValue]?)] {
        guard let path = checks.checksumFile, let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw DownloadError.usage("cannot read checksum file \(checks.checksumFile ?? "")")
        }
        let entries = try ChecksumSpec.entries(in: text)
        if entries.isEmpty { throw DownloadError.usage("checksum file \(path) has no entries") }
        return entries.map { ($0.name, [$0.digest]) }
    }

    /// Checks one file: against `expected` (an entry of the checksum file) or the options.
    private func check(_ file: String, expected entry: [DigestValue]?) async throws(DownloadError) {
            if let metalink {
                let description = try Metalink.load(path: metalink)
                let reporter = Reporter(json: false, quiet: false)
                var options = DownloadOptions()
                try network.apply(to: &options)
                if repair && network.insecure { reporter.handle(.warning(.certificatesUnchecked)) }
                let result = try await Interrupts.cancelling { [file, repair, options] () async throws(DownloadError) -> MetalinkVerification in
                    try await Downloader(options: options).verify(fileAt: file, metalink: description, repair: repair) { event in
                        if case .warning = event { reporter.handle(event) }
                    }
                }
                if !result.repairedPieces.isEmpty {
                    print("\(file): repaired \(result.repairedPieces.count) piece(s) (\(result.repairedPieces.map(String.init).joined(separator: ", "))), \(result.fetchedBytes) bytes fetched")
                }
                if result.pieceCount > 0 { print("\(file): all \(result.pieceCount) pieces OK") }
                for digest in result.verified { print("\(file): \(digest.algorithm.rawValue) OK") }
            }
            let name = file.split(separator: "/").last.map(String.init) ?? file
            let expected: [DigestValue]
            if let entry { expected = entry } else { expected = try checks.expectedDigests(forFileNamed: name) }
            if !expected.isEmpty {
                let actual = try await Downloader.verify(fileAt: file, expected: expected)
                for digest in actual { print("\(file): \(digest.algorithm.rawValue) OK") }
            }
            if let algorithm = printDigest?.algorithm {
                let digest = try await Downloader.digests(ofFileAt: file, algorithms: [algorithm])[0]
                print("\(digest.hex)  \(file)")
            }
    }
}
