import RangeFetchBase
import RangeFetchNetwork

/// A Hugging Face Hub repository at a revision, from the text the user gave:
/// `hf://ORG/NAME[@REV]` (a model), `hf://datasets/ORG/NAME[@REV]`, `hf://spaces/ORG/NAME[@REV]`
/// (as huggingface_hub's `HfFileSystem` spells them; `models/` may be written too). A pure value:
/// the URLs it is asked at and where it lives in the Hub's cache are worked out here alone.
///
/// Everything that later becomes a path is checked here: the repository id as the Hub itself
/// allows it (letters, digits, `-`, `_`, `.`; no `--` or `..`, which the cache's folder names
/// would make ambiguous), the revision as a branch, tag or commit name (no `..` component).
package struct HubRepository: Sendable, Equatable {
    package enum Kind: String, Sendable, CaseIterable {
        case model, dataset, space

        /// The API's and the cache's plural: `models`, `datasets`, `spaces`.
        package var plural: String { rawValue + "s" }
        /// What precedes the id in a file's URL: nothing for a model.
        var urlPrefix: String { self == .model ? "" : plural + "/" }
    }

    package var kind: Kind
    /// `ORG/NAME`.
    package var id: String
    /// The branch, tag or commit asked for (`main` when none is given).
    package var revision: String

    /// The default branch, when no `@REV` is given.
    package static let defaultRevision = "main"

    /// Parses `text`.
    /// - Throws: `invalidURL` naming what is wrong and what is expected.
    package init(_ text: String) throws(DownloadError) {
        func failure(_ why: String) -> DownloadError {
            DownloadError(.invalidURL, "\(text): \(why) (expected hf://ORG/NAME[@REVISION], hf://datasets/ORG/NAME or hf://spaces/ORG/NAME)", url: text)
        }
        guard text.lowercased().hasPrefix(Self.scheme) else { throw failure("not an hf:// URL") }
        var rest = Substring(text.dropFirst(Self.scheme.count))
        var revision = Self.defaultRevision
        if let at = rest.firstIndex(of: "@") {
            revision = String(rest[rest.index(after: at)...])
            rest = rest[..<at]
            guard Self.isRevision(revision) else { throw failure("'\(revision)' is not a revision name") }
        }
        var parts = rest.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        var kind = Kind.model
        if parts.count == 3, let named = Kind.allCases.first(where: { $0.plural == parts[0] }) {
            kind = named
            parts.removeFirst()
        }
        guard parts.count == 2 else {
            throw failure(parts.count == 1 ? "a repository is named ORG/NAME" : "'\(rest)' is not ORG/NAME")
        }
        guard parts.allSatisfy(Self.isIDPart) else { throw failure("'\(rest)' is not a repository id the Hub allows") }
        self.kind = kind
        self.id = parts.joined(separator: "/")
        self.revision = revision
    }

    /// Whether `text` is an `hf://` URL (any letter case).
    package static func isHubURL(_ text: String) -> Bool { text.lowercased().hasPrefix(scheme) }

    static let scheme = "hf://"

    /// `hf://[datasets/]ORG/NAME@REV`, for messages.
    package var description: String {
        "hf://\(kind.urlPrefix)\(id)" + (revision == Self.defaultRevision ? "" : "@\(revision)")
    }

    /// The folder of this repository in the Hub's cache: `models--ORG--NAME`.
    package var cacheFolder: String { "\(kind.plural)--" + id.replacingSlashes(with: "--") }

    /// The repository's information at `revision` (its commit is `sha`).
    func revisionURL(endpoint: String) -> String {
        "\(endpoint)/api/\(kind.plural)/\(id)/revision/\(Self.encoded(revision, keepingSlashes: false))"
    }

    /// The first page of the recursive file listing at `commit`.
    func treeURL(endpoint: String, commit: String) -> String {
        "\(endpoint)/api/\(kind.plural)/\(id)/tree/\(commit)?recursive=true&expand=false"
    }

    /// Where the file at `path` is fetched at `commit`: the Hub answers a large file with a
    /// redirect to its CDN (a signed, expiring URL).
    func resolveURL(endpoint: String, commit: String, path: String) -> String {
        "\(endpoint)/\(kind.urlPrefix)\(id)/resolve/\(commit)/\(Self.encoded(path, keepingSlashes: true))"
    }

    // MARK: The rules

    static func isIDPart(_ part: String) -> Bool {
        !part.isEmpty && part.utf8.count <= 96 && !part.contains("--") && !part.contains("..")
            && part.first != "-" && part.first != "." && part.last != "-" && part.last != "."
            && part.unicodeScalars.allSatisfy { $0.isASCII && (isAlphanumeric($0) || "-_.".unicodeScalars.contains($0)) }
    }

    /// A branch, tag or commit name: printable ASCII without spaces, no empty or `..` component
    /// (it becomes `refs/REV` in the cache).
    static func isRevision(_ text: String) -> Bool {
        let components = text.split(separator: "/", omittingEmptySubsequences: false)
        return !text.isEmpty && text.utf8.count <= 255
            && components.allSatisfy { !$0.isEmpty && $0 != "." && $0 != ".." }
            && text.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F && !"\\?#%".unicodeScalars.contains($0) }
    }

    private static func isAlphanumeric(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
    }

    /// `text` percent-encoded for a URL path (RFC 3986 unreserved kept; `/` kept when asked).
    static func encoded(_ text: String, keepingSlashes: Bool) -> String {
        var out = ""
        for byte in text.utf8 {
            let scalar = Unicode.Scalar(byte)
            if scalar.isASCII && (isAlphanumeric(scalar) || "-._~".unicodeScalars.contains(scalar) || (keepingSlashes && byte == UInt8(ascii: "/"))) {
                out.unicodeScalars.append(scalar)
            } else {
                out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return out
    }
}

private extension String {
    func replacingSlashes(with separator: String) -> String {
        split(separator: "/", omittingEmptySubsequences: false).joined(separator: separator)
    }
}
