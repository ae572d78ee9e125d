import RangeFetch

/// The CLI's exit statuses (documented in docs/usage.md, "Exit codes").
enum ExitStatus {
    static let success: Int32 = 0
    static let other: Int32 = 1
    static let usage: Int32 = 2
    static let network: Int32 = 3
    static let fileSystem: Int32 = 4
    static let checksum: Int32 = 5
    static let interrupted: Int32 = 130

    static func code(for error: DownloadError) -> Int32 {
        switch error.category {
        case .usage: usage
        case .network: network
        case .fileSystem: fileSystem
        case .checksum: checksum
        case .interrupted: interrupted
        default: other
        }
    }
}

extension DownloadError {
    /// The message with what to type about it: the library names the situation and a
    /// ``DownloadError/Remedy``; the command line's words for the remedy are added here.
    var cliMessage: String {
        guard let remedy else { return message }
        return message + "; " + Self.advice(remedy)
    }

    static func advice(_ remedy: Remedy) -> String {
        switch remedy {
        case .runAgainToResume: "rerun the same command to resume"
        case .freeSpaceThenRunAgain: "free some space; rerunning the same command resumes"
        case .chooseWritableLocation: "choose a writable location with -o or -d"
        case .giveCredentials: "pass --user USER:PASSWORD, credentials in the URL, or -H 'Authorization: ...'"
        case .waitOrChooseOtherOutput: "wait for it or choose another -o"
        case .removeStrayFile: "remove it, or choose another -o or -d"
        case .continueOrOverwrite: "use --continue to resume from its bytes or --overwrite to replace it"
        case .overwrite: "use --overwrite to replace it"
        case .downloadIntoDirectory: "use -d DIR to download into it"
        case .fetchPrefixAsBatch: "rangefetch s3://BUCKET/PREFIX/ -d DIR fetches every object under it"
        case .trustCertificate: "use --cacert FILE, or --insecure at your own risk"
        case .fixProxy: "is it up? --proxy URL sets another, --noproxy HOST bypasses it"
        case .giveS3Credentials: "set them, or use --no-sign-request for a public bucket"
        }
    }
}
