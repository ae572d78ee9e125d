import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// moto's S3 server (`Tests/Support/s3_server.py`) on 127.0.0.1 with signatures enforced, set
/// up with bucket `models` and the objects named by `objects` (see the script), started for one
/// test and stopped by pid. Needs `scripts/test.sh`'s venv (Tests/.venv with moto[server]).
final class S3Server {
    let port: Int
    let endpoint: String
    let accessKey: String
    let secretKey: String
    let session: (accessKey: String, secretKey: String, token: String)
    private let process: Process

    static let python = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".venv/bin/python").path
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Support/s3_server.py").path

    init(objects: [String], state: TemporaryDirectory) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.python) else {
            throw TestFailure("\(Self.python) missing: run scripts/test.sh (it installs moto[server] there)")
        }
        port = try freeLoopbackPort()
        let stateFile = state.file("s3-state.json")
        process = try TestProcess.startServer(Self.python, [Self.script, "\(port)", stateFile] + objects, port: port)
        let deadline = Date().addingTimeInterval(120)
        while !FileManager.default.fileExists(atPath: stateFile) {
            guard process.isRunning, Date() < deadline else {
                stopProcess(process, signal: SIGTERM, graceSeconds: 2)
                throw TestFailure("moto's S3 server was not set up within 120 s")
            }
            usleep(50_000)
        }
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stateFile))) as? [String: Any] ?? [:]
        endpoint = json["endpoint"] as? String ?? ""
        accessKey = json["access_key"] as? String ?? ""
        secretKey = json["secret_key"] as? String ?? ""
        let session = json["session"] as? [String: String] ?? [:]
        self.session = (session["access_key"] ?? "", session["secret_key"] ?? "", session["token"] ?? "")
    }

    deinit { stop() }

    func stop() {
        stopProcess(process, signal: SIGTERM, graceSeconds: 3)
    }

    /// The variables AWS's tools read, for this server and the tester's key.
    var environment: [String: String] {
        ["AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secretKey,
         "AWS_REGION": "us-east-1", "AWS_PROFILE": "", "AWS_SESSION_TOKEN": ""]
    }

    /// The bytes the script stores under `name`: SHA-256 blocks seeded by the name.
    static func content(_ name: String, size: Int) -> Data {
        let seed = Digest.sha256Bytes(Array(name.utf8))
        var out = Data(capacity: size + 32)
        var block: UInt64 = 0
        while out.count < size {
            var little = block.littleEndian
            let counter = withUnsafeBytes(of: &little) { Array($0) }
            out.append(contentsOf: Digest.sha256Bytes(seed + counter))
            block += 1
        }
        return out.prefix(size)
    }
}

extension Digest {
    static func sha256Bytes(_ bytes: [UInt8]) -> [UInt8] {
        let digest = Digest(.sha256)
        digest.update(bytes)
        return digest.finalize().bytes
    }
}
