import ArgumentParser
import FoundationEssentials
import RangeFetch

/// `rangefetch verify FILE`: check (or print) a file's digests.
struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a file on disk against a checksum, or print its digest.",
        usage: "rangefetch verify <file> [<options>]",
        discussion: """
        Exits 0 when every given digest matches, 5 on a mismatch, 4 when the file cannot be read.

        Examples:
          rangefetch verify big.iso --checksum sha256=9f86d081…
          rangefetch verify big.iso --checksum-file SHA256SUMS
          rangefetch verify big.iso --print-digest sha256      # like sha256sum, but faster
        """
    )

    @Argument(help: "The file to check.")
    var file: String

    @OptionGroup var checks: ChecksumOptions

    @Option(name: .customLong("print-digest"), help: ArgumentHelp("Print the file's digest in sha256sum format. Example: --print-digest md5", valueName: "algo"), transform: DigestAlgorithmArgument.parse)
    var printDigest: DigestAlgorithmArgument?

    func validate() throws {
        if checks.checksums.isEmpty && checks.checksumFile == nil && printDigest == nil {
            throw ValidationError("give --checksum, --checksum-file or --print-digest")
        }
    }

    func run() async throws {
        do {
            try await check()
        } catch {
            let status = ExitStatus.code(for: error)
            Reporter(json: false, quiet: false).fail(error, status: status)
            throw CommandFailure(status: status)
        }
    }

    private func check() async throws(DownloadError) {
            let name = file.split(separator: "/").last.map(String.init) ?? file
            let expected = try checks.expectedDigests(forFileNamed: name)
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
