import RangeFetch

/// The CLI's exit statuses (documented in README.md).
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
