import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Our fake Hugging Face Hub (`Tests/Support/fake_hub.py`, standard library only): the Hub's API
/// and `/resolve/` on one origin, a CDN with signed, expiring URLs on another, a request log, and
/// control endpoints to corrupt a file or move the clock. Validated against huggingface_hub
/// itself (`Tests/Support/fake_hub_check.py`). Started for one test, stopped by pid.
final class HubServer {
    /// `http://127.0.0.1:PORT`: what `HF_ENDPOINT` names.
    let hub: String
    /// The CDN's origin.
    let cdn: String
    let token: String
    private let process: Process
    private let logPath: String

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Support/fake_hub.py").path

    /// One file of a repository: its bytes made from a seed (`generate`), or its text.
    struct File {
        var path: String
        var lfs: Bool
        var size: Int = 0
        var text: String? = nil

        static func large(_ path: String, size: Int) -> File { File(path: path, lfs: true, size: size) }
        static func small(_ path: String, _ text: String) -> File { File(path: path, lfs: false, text: text) }

        var json: [String: Any] {
            var entry: [String: Any] = ["path": path, "lfs": lfs]
            if let text { entry["text"] = text } else { entry["generate"] = ["size": size, "seed": path] }
            return entry
        }
    }

    struct Repository {
        var kind = "model"
        var id: String
        var isPrivate = false
        /// Branch name to (commit, files).
        var branches: [String: (commit: String, files: [File])]
    }

    init(_ repositories: [Repository], directory: TemporaryDirectory, arguments: [String] = []) throws {
        token = "hf_test_" + UUID().uuidString.prefix(8).lowercased()
        let config: [String: Any] = ["repos": repositories.map { repository in
            [
                "type": repository.kind, "id": repository.id, "private": repository.isPrivate,
                "branches": repository.branches.mapValues(\.commit),
                "commits": Dictionary(repository.branches.values.map { ($0.commit, $0.files.map(\.json)) }) { first, _ in first },
            ] as [String: Any]
        }]
        let configPath = directory.file("repos.json")
        try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: configPath))
        let ready = directory.file("hub-ready.json")
        logPath = directory.file("hub-log.jsonl")
        let port = try freeLoopbackPort()
        process = try TestProcess.startServer(Self.script, [
            "--repos", configPath, "--root", directory.path, "--port", "\(port)", "--cdn-port", "0",
            "--ready-file", ready, "--token", token, "--log", logPath,
        ] + arguments, port: port)
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: ready) {
            guard Date() < deadline else { throw TestFailure("the fake Hub wrote no ready file") }
            usleep(20_000)
        }
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: ready))) as? [String: Any] ?? [:]
        hub = json["hub"] as? String ?? ""
        cdn = json["cdn"] as? String ?? ""
    }

    deinit { stop() }

    func stop() { stopProcess(process, signal: SIGTERM, graceSeconds: 3) }

    /// The bytes the fake serves for `file` (as `generate` makes them: sha256 of the seed and a little-endian 64-bit counter, block after block).
    static func bytes(of file: File) -> [UInt8] {
        if let text = file.text { return Array(text.utf8) }
        var out: [UInt8] = []
        var counter = 0
        while out.count < file.size {
            let digest = Digest(.sha256)
            digest.update(Array(file.path.utf8) + withUnsafeBytes(of: UInt64(counter).littleEndian, Array.init))
            out += digest.finalize().bytes
            counter += 1
        }
        return Array(out.prefix(file.size))
    }

    /// Every request logged so far: origin (`hub` or `cdn`), method, path, status, and whether
    /// it carried an `Authorization` header.
    func log() throws -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// POSTs a control call (`corrupt?repo=…&path=…`, `clock?advance=…`).
    func control(_ call: String) throws {
        let result = try TestProcess.run("/usr/bin/curl", ["-sf", "-X", "POST", "\(hub)/_control/\(call)"])
        guard result.status == 0 else { throw TestFailure("control \(call): curl exit \(result.status)") }
    }
}
