import RangeFetchBase
import RangeFetchNetwork

/// A Metalink 4 document (RFC 5854, `.meta4`), or a Metalink 3.0 one (`.metalink`, its
/// `<files>`, `<verification>` and `<resources>` read as the same things): one file's name, size,
/// whole-file digests, piece digests and the URLs that serve it. A pure value, read by
/// ``parse(_:origin:)``.
///
/// Everything in it is untrusted: the name is made a plain file name (`FileName.usable(_:from:)`
/// as a server's name: its last path component only, so `../../etc/x` is saved as `x` in the
/// output directory, never outside it); only `http://` and `https://` URLs are kept (others are
/// listed in ``ignored``); a document over ``maximumBytes`` or with a DTD (entities, external
/// files) is refused before anything in it is used.
public struct Metalink: Sendable, Equatable {
    /// One `<url>` of the file.
    public struct Location: Sendable, Equatable {
        /// The URL, `http://` or `https://`.
        public var url: String
        /// Its `priority` (1 is the most preferred; absent: ``Metalink/lowestPriority``).
        public var priority: Int
        /// Its `location` (ISO 3166-1 country code), if given.
        public var country: String?
    }

    /// The digests of the file's consecutive pieces (`<pieces length type>`).
    public typealias Pieces = PieceDigests

    /// The file's name, made safe (see the type's notes).
    public var name: String
    /// `<size>`, if given.
    public var size: Int64?
    /// The whole-file `<hash>`es in algorithms we compute (sha-256, sha-512, sha-1, md5).
    public var digests: [DigestValue]
    /// `<pieces>`, if given in an algorithm we compute.
    public var pieces: Pieces?
    /// The usable URLs, most preferred first (by priority, then document order).
    public var locations: [Location]
    /// The URLs past ``maximumLocations`` (the next best, at most ``maximumBackupLocations``):
    /// backups, each checked only when an agreed mirror is dropped.
    public var backupLocations: [Location] = []
    /// The most URLs used from one metalink (the best by priority; aria2c uses a handful too):
    /// each is sampled before it is used, so thousands would only be requests.
    public static let maximumLocations = 8
    /// The most URLs kept as backups past those.
    public static let maximumBackupLocations = 8
    /// What was left out and why, one routine note each (a `file:` or `ftp:` URL, an unknown
    /// hash type).
    public var ignored: [String]

    /// The largest document read (a metalink for one file is a few KiB; piece digests of a
    /// 100 GiB file in 1 MiB pieces are about 10 MiB).
    public static let maximumBytes = 16 << 20
    /// The priority of a `<url>` that gives none (RFC 5854 allows 1 to 999999).
    public static let lowestPriority = 999_999

    /// Reads the metalink in `bytes`; `origin` (its path) names it in errors.
    /// - Throws: `invalidOption` for a document that is too large, not well-formed XML, has a
    ///   DTD, is not a Metalink 4 or 3.0 document, describes no file or several, has no HTTP(S) URL, or
    ///   carries a size, digest or piece list that does not add up; `missingLibrary` when
    ///   libxml2 cannot be loaded.
    public static func parse(_ bytes: [UInt8], origin: String) throws(DownloadError) -> Metalink {
        func failure(_ why: String) -> DownloadError {
            DownloadError(.invalidOption, "metalink \(origin): \(why)")
        }
        guard bytes.count <= maximumBytes else {
            throw failure("larger than \(maximumBytes >> 20) MiB, which no metalink for one file needs")
        }
        let root: XMLTree.Element
        do {
            root = try XMLTree.parse(bytes, refusingDocumentType: true)
        } catch .noParser {
            throw DownloadError(.missingLibrary, "metalink \(origin): reading it needs libxml2 (libxml2.so.2, Debian package libxml2), which could not be loaded")
        } catch .documentType {
            throw failure("it declares a document type (<!DOCTYPE>), which a metalink never needs; refused so that none of its entities is expanded")
        } catch {
            throw failure("not well-formed XML")
        }
        guard root.name == "metalink" else { throw failure("not a Metalink document (its root is <\(root.name)>, not <metalink>)") }
        let layout = Layout(root)
        let files = layout.files
        guard let file = files.first else { throw failure("it describes no <file>") }
        guard files.count == 1 else { throw failure("it describes \(files.count) files; only one <file> per metalink is supported") }
        guard let name = FileName.usable(file.attributes["name"] ?? "", from: .server) else {
            throw failure("its <file> has no usable name")
        }
        var ignored: [String] = []
        var size: Int64?
        if let text = file["size"]?.text {
            guard let value = Int64(text.trimmingASCIIWhitespace()), value >= 0 else { throw failure("<size> '\(text)' is not a byte count") }
            size = value
        }
        var digests: [DigestValue] = []
        for hash in layout.hashes(of: file) {
            let type = hash.attributes["type"] ?? ""
            guard let algorithm = DigestAlgorithm(name: type), algorithm.isCryptographic else {
                ignored.append("<hash type=\"\(type)\"> ignored: not an algorithm rangefetch computes")
                continue
            }
            guard let value = DigestValue(algorithm: algorithm, hex: String(hash.text.trimmingASCIIWhitespace())) else {
                throw failure("<hash type=\"\(type)\"> is not \(algorithm.byteCount * 2) hex digits")
            }
            digests.append(value)
        }
        let pieces = try Self.pieces(layout.pieces(of: file), size: size, ignored: &ignored, failure: failure)
        var locations: [Location] = []
        for element in layout.urls(of: file) {
            let url = String(element.text.trimmingASCIIWhitespace())
            guard (try? SourceAddress.http(url)) != nil else {
                ignored.append("<url> \(Redaction.url(url)) ignored: only http:// and https:// URLs are used")
                continue
            }
            let priority = try layout.priority(of: element, failure: failure)
            locations.append(Location(url: url, priority: priority, country: element.attributes["location"]))
        }
        guard !locations.isEmpty else { throw failure("it lists no http:// or https:// <url> for \(name)") }
        // Stable: equal priorities keep the document's order.
        locations = locations.enumerated().sorted { ($0.element.priority, $0.offset) < ($1.element.priority, $1.offset) }.map(\.element)
        var backups: [Location] = []
        if locations.count > maximumLocations {
            // 3,000 URLs once meant 3,365 requests to 673 hosts and no byte saved in 120 s.
            backups = Array(locations[maximumLocations...].prefix(maximumBackupLocations))
            let more = locations.count - maximumLocations - backups.count
            if more > 0 {
                ignored.append("\(more) more <url>s ignored: the first \(maximumLocations) by priority are used, the next \(backups.count) kept as backups")
            }
            locations.removeSubrange(maximumLocations...)
        }
        return Metalink(name: name, size: size, digests: digests, pieces: pieces, locations: locations,
                        backupLocations: backups, ignored: ignored)
    }

    private static func pieces(_ element: XMLTree.Element?, size: Int64?, ignored: inout [String],
                               failure: (String) -> DownloadError) throws(DownloadError) -> Pieces? {
        guard let element else { return nil }
        let type = element.attributes["type"] ?? ""
        guard let algorithm = DigestAlgorithm(name: type), algorithm.isCryptographic else {
            ignored.append("<pieces type=\"\(type)\"> ignored: not an algorithm rangefetch computes")
            return nil
        }
        guard let text = element.attributes["length"], let length = Int64(text), length > 0 else {
            throw failure("<pieces> has no positive length")
        }
        var digests: [DigestValue] = []
        for hash in try Self.inPieceOrder(element.all("hash"), failure: failure) {
            guard let value = DigestValue(algorithm: algorithm, hex: String(hash.text.trimmingASCIIWhitespace())) else {
                throw failure("a <pieces> <hash> is not \(algorithm.byteCount * 2) hex digits")
            }
            digests.append(value)
        }
        guard let size else { throw failure("<pieces> without a <size> cannot be checked") }
        let expected = size == 0 ? 0 : (size - 1) / length + 1
        guard Int64(digests.count) == expected else {
            throw failure("<pieces> has \(digests.count) hashes; \(size) bytes in pieces of \(length) need \(expected)")
        }
        return Pieces(length: length, digests: digests)
    }

    /// Metalink 3.0 numbers its piece hashes (`<hash piece="0">`); they are taken in that order,
    /// each number once. Metalink 4's have no numbers: document order.
    private static func inPieceOrder(_ hashes: [XMLTree.Element],
                                     failure: (String) -> DownloadError) throws(DownloadError) -> [XMLTree.Element] {
        let numbers = hashes.compactMap { $0.attributes["piece"].flatMap { Int($0.trimmingASCIIWhitespace()) } }
        guard !numbers.isEmpty else { return hashes }
        guard numbers.count == hashes.count, numbers.sorted() == Array(0..<hashes.count) else {
            throw failure("<pieces> numbers its hashes other than 0 to \(hashes.count - 1), each once")
        }
        return zip(numbers, hashes).sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// Where each part of a file entry is in either version: Metalink 4 keeps them under
    /// `<file>`; Metalink 3.0 has `<files><file>`, hashes and pieces under `<verification>`,
    /// URLs under `<resources>` with a `preference` (0 to 100, the higher preferred).
    private struct Layout {
        let root: XMLTree.Element
        let isVersion3: Bool

        init(_ root: XMLTree.Element) {
            self.root = root
            isVersion3 = root["files"] != nil
        }

        var files: [XMLTree.Element] { isVersion3 ? root["files"]?.all("file") ?? [] : root.all("file") }

        func hashes(of file: XMLTree.Element) -> [XMLTree.Element] {
            isVersion3 ? file["verification"]?.all("hash") ?? [] : file.all("hash")
        }

        func pieces(of file: XMLTree.Element) -> XMLTree.Element? {
            isVersion3 ? file["verification"]?["pieces"] : file["pieces"]
        }

        func urls(of file: XMLTree.Element) -> [XMLTree.Element] {
            isVersion3 ? file["resources"]?.all("url") ?? [] : file.all("url")
        }

        /// RFC 5854's priority (1 the most preferred); a 3.0 `preference` P (0 to 100, the higher
        /// preferred) becomes 101 - P, so 100 comes first and 0 after every ranked one.
        func priority(of url: XMLTree.Element, failure: (String) -> DownloadError) throws(DownloadError) -> Int {
            let attribute = isVersion3 ? "preference" : "priority"
            guard let text = url.attributes[attribute] else { return lowestPriority }
            guard let value = Int(text.trimmingASCIIWhitespace()) else {
                throw failure("<url \(attribute)=\"\(text)\"> is not a number")
            }
            if isVersion3 {
                guard (0...100).contains(value) else { throw failure("<url preference=\"\(text)\"> is not a number from 0 to 100") }
                return 101 - value
            }
            guard value >= 1 else { throw failure("<url priority=\"\(text)\"> is not a number from 1") }
            return min(value, lowestPriority)
        }
    }
}
