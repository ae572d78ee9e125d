import RangeFetchBase
import RangeFetchNetwork
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// What identifies one batch entry in the batch journal: 128 bits of the SHA-256 of its URL (the
/// whole URL, query and userinfo included, which never appear in the journal themselves), its
/// output path and the digests its list line asks for. Two entries share a key only when all
/// three are the same; a list line that changes any of them finds no record.
struct BatchKey: Hashable, Sendable {
    var high: UInt64
    var low: UInt64

    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The key of the entry for `url` saved at `path`, expected to match `checksums`.
    init(url: String, path: String, checksums: [DigestValue]) {
        let digest = Digest(.sha256)
        let expected = checksums.map(\.description).sorted().joined(separator: ",")
        digest.update(Array("\(url)\u{0}\(path)\u{0}\(expected)".utf8))
        let bytes = digest.finalize().bytes
        self.init(high: Self.word(bytes, 0), low: Self.word(bytes, 8))
    }

    /// 32 hex digits, as in the journal.
    var hex: String {
        var bytes: [UInt8] = []
        writeHex(into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends ``hex``'s bytes to `bytes`.
    func writeHex(into bytes: inout [UInt8]) {
        for word in [high, low] {
            for shift in stride(from: 60, through: 0, by: -4) {
                bytes.append(Self.hexDigits[Int(word >> UInt64(shift) & 0xF)])
            }
        }
    }

    init?(hex: Substring) {
        guard hex.utf8.count == 32, let high = UInt64(hex.prefix(16), radix: 16),
              let low = UInt64(hex.suffix(16), radix: 16) else { return nil }
        self.init(high: high, low: low)
    }

    private static func word(_ bytes: [UInt8], _ start: Int) -> UInt64 {
        bytes[start..<start + 8].reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// What ties a journal record to the file on disk: its size, modification and status-change
/// times (nanoseconds) and its inode and device. Rewriting, truncating, replacing (a new inode),
/// `touch` and `chmod` all change one of them (`ctime` cannot be set back by a user), so a
/// matching stamp means the file is the one the download left.
struct FileStamp: Hashable, Sendable {
    var size: Int64
    var modifiedNanoseconds: Int64
    var changedNanoseconds: Int64
    var inode: UInt64
    var device: UInt64

    /// The stamp of the regular file at `path` now (`lstat`: a link is not followed, and is no
    /// regular file); `nil` when there is none.
    init?(fileAt path: String) {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        self.init(size: Int64(info.st_size),
                  modifiedNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
                  changedNanoseconds: Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec),
                  inode: UInt64(info.st_ino), device: UInt64(info.st_dev))
    }

    init(size: Int64, modifiedNanoseconds: Int64, changedNanoseconds: Int64, inode: UInt64, device: UInt64) {
        self.size = size
        self.modifiedNanoseconds = modifiedNanoseconds
        self.changedNanoseconds = changedNanoseconds
        self.inode = inode
        self.device = device
    }
}

/// One finished entry of a batch, as the batch journal keeps it: one line of text,
///
/// ```
/// <sha256 of the rest, 64 hex> rfb1 <key, 32 hex> <size> <mtime ns> <ctime ns> <inode> <device> <details JSON>
/// ```
///
/// The details (redacted URL and path for humans, ETag, Last-Modified, digests verified) are a
/// JSON object, which escapes any newline; only the fixed fields before it are read to decide a
/// skip. A line whose checksum does not match (torn by a crash, damaged, edited) decodes to
/// `nil` and is never trusted.
struct BatchRecord: Equatable, Sendable {
    var key: BatchKey
    var stamp: FileStamp
    var details: Details

    /// What the record says for humans and later tools; not used to decide a skip.
    struct Details: Codable, Equatable, Sendable {
        /// The URL with its password and signature removed (`Redaction.url(_:)`).
        var url: String
        var path: String
        var etag: String?
        var lastModified: String?
        /// Digests verified by the download, `algorithm=hex`.
        var digests: [String]

        enum CodingKeys: String, CodingKey {
            case url, path, etag, digests
            case lastModified = "last_modified"
        }

        /// The details as one JSON object, keys sorted, absent ones left out (as `JSONEncoder`
        /// with `.sortedKeys` writes them, without its cost: a list's every file writes one).
        var json: String {
            var bytes: [UInt8] = []
            write(into: &bytes)
            return String(decoding: bytes, as: UTF8.self)
        }

        /// Appends ``json``'s bytes to `bytes`.
        func write(into bytes: inout [UInt8]) {
            func field(_ key: StaticString, _ value: String, first: Bool = false) {
                if !first { bytes.append(UInt8(ascii: ",")) }
                bytes.append(UInt8(ascii: "\""))
                bytes.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
                bytes.append(contentsOf: "\":".utf8)
                JSONObject.quote(value, into: &bytes)
            }
            bytes.append(contentsOf: "{\"digests\":[".utf8)
            for (index, digest) in digests.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                JSONObject.quote(digest, into: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
            if let etag { field("etag", etag) }
            if let lastModified { field("last_modified", lastModified) }
            field("path", path)
            field("url", url)
            bytes.append(UInt8(ascii: "}"))
        }
    }

    static let tag = "rfb1"

    /// The record as one line, ending in a newline: built in one buffer, its checksum written
    /// into the room left for it (a list's every file writes one: 20,000 files of 4 KiB to tmpfs
    /// spent 4 % of their CPU time here when it was built from strings).
    var line: [UInt8] {
        let space = UInt8(ascii: " ")
        var bytes = [UInt8](repeating: space, count: 65)
        bytes.reserveCapacity(256 + details.url.utf8.count + details.path.utf8.count)
        bytes.append(contentsOf: Self.tag.utf8)
        bytes.append(space)
        key.writeHex(into: &bytes)
        for number in [stamp.size, stamp.modifiedNanoseconds, stamp.changedNanoseconds] {
            bytes.append(space)
            bytes.append(contentsOf: String(number).utf8)
        }
        for number in [stamp.inode, stamp.device] {
            bytes.append(space)
            bytes.append(contentsOf: String(number).utf8)
        }
        bytes.append(space)
        details.write(into: &bytes)
        let digest = Digest(.sha256)
        bytes[65...].withUnsafeBytes { digest.update($0) }
        for (index, byte) in digest.finalize().bytes.enumerated() {
            bytes[2 * index] = BatchKey.hexDigits[Int(byte >> 4)]
            bytes[2 * index + 1] = BatchKey.hexDigits[Int(byte & 0xF)]
        }
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// The key and stamp of a line (without its newline), or `nil` when its checksum or fixed
    /// fields are wrong. The details are not decoded: this is what loading a journal of a million
    /// records does.
    static func decodeStamp(_ line: ArraySlice<UInt8>) -> (BatchKey, FileStamp)? {
        parse(line).map { ($0.key, $0.stamp) }
    }

    private static func parse(_ line: ArraySlice<UInt8>) -> (key: BatchKey, stamp: FileStamp, details: ArraySlice<UInt8>)? {
        guard line.count > 65, line[line.startIndex + 64] == UInt8(ascii: " ") else { return nil }
        let rest = line[(line.startIndex + 65)...]
        guard checksum(rest).utf8.elementsEqual(line[line.startIndex..<line.startIndex + 64]) else { return nil }
        let fields = rest.split(separator: UInt8(ascii: " "), maxSplits: 7, omittingEmptySubsequences: false)
        guard fields.count == 8, fields[0].elementsEqual(tag.utf8) else { return nil }
        func text(_ index: Int) -> Substring { Substring(decoding: fields[index], as: UTF8.self) }
        guard let key = BatchKey(hex: text(1)), let size = Int64(text(2)), size >= 0,
              let modified = Int64(text(3)), let changed = Int64(text(4)),
              let inode = UInt64(text(5)), let device = UInt64(text(6)) else { return nil }
        let stamp = FileStamp(size: size, modifiedNanoseconds: modified, changedNanoseconds: changed, inode: inode, device: device)
        return (key, stamp, fields[7])
    }

    /// The whole record of a line (without its newline), or `nil` as ``decodeStamp(_:)``, or when
    /// its details are not the JSON object they should be.
    static func decode(_ line: ArraySlice<UInt8>) -> BatchRecord? {
        guard let parsed = parse(line),
              let details = try? JSONDecoder().decode(Details.self, from: Data(parsed.details)) else { return nil }
        return BatchRecord(key: parsed.key, stamp: parsed.stamp, details: details)
    }

    private static func checksum(_ bytes: ArraySlice<UInt8>) -> String {
        let digest = Digest(.sha256)
        bytes.withUnsafeBytes { digest.update($0) }
        return digest.finalize().hex
    }
}
