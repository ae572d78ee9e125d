import Foundation
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// A scratch directory removed when the test is done with it.
final class TemporaryDirectory {
    let path: String

    init(_ label: String = "rf") throws {
        let template = NSTemporaryDirectory() + "\(label)-XXXXXX"
        var bytes = Array(template.utf8CString)
        guard mkdtemp(&bytes) != nil else { throw TestFailure("mkdtemp failed") }
        path = String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        chmod(path, 0o755)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }

    /// Writes `size` random bytes to `name` and returns its path.
    @discardableResult
    func randomFile(_ name: String, size: Int64) throws -> String {
        let target = file(name)
        let result = try TestProcess.run("/bin/sh", ["-c", "head -c \(size) /dev/urandom > '\(target)'"])
        guard result.status == 0 else { throw TestFailure("could not create \(target): \(result.stderr)") }
        chmod(target, 0o644)
        return target
    }

    func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: file(name)) }
}

enum Checksums {
    /// `sha256sum` of a file: an independent implementation to check ours against.
    static func sha256sum(_ path: String) throws -> String {
        let result = try TestProcess.run("/usr/bin/sha256sum", [path])
        guard result.status == 0, let hex = result.stdout.split(separator: " ").first else {
            throw TestFailure("sha256sum failed: \(result.stderr)")
        }
        return String(hex)
    }

    static func md5sum(_ path: String) throws -> String {
        let result = try TestProcess.run("/usr/bin/md5sum", [path])
        guard result.status == 0, let hex = result.stdout.split(separator: " ").first else {
            throw TestFailure("md5sum failed: \(result.stderr)")
        }
        return String(hex)
    }
}

/// A TCP socket bound to a free port on 127.0.0.1 (listening when `backlog` is given), with
/// that port; the caller closes the descriptor.
func loopbackSocket(listening backlog: Int32? = nil) throws -> (descriptor: Int32, port: Int) {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw TestFailure("socket: errno \(errno)") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(descriptor, pointer, length) == 0 && backlog.map { listen(descriptor, $0) == 0 } ?? true
                && getsockname(descriptor, pointer, &length) == 0
        }
    }
    guard bound else {
        let code = errno
        close(descriptor)
        throw TestFailure("bind/listen: errno \(code)")
    }
    return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
}

/// A free TCP port on 127.0.0.1 (bound and released; the small race is acceptable in tests).
func freeLoopbackPort() throws -> Int {
    let (descriptor, port) = try loopbackSocket()
    close(descriptor)
    return port
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
func isListening(port: Int) -> Bool {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { return false }
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}
