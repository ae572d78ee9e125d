import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// What curl, wget and aria2c users type: their flags, a config file, proxies, pinned addresses.
@Suite(.serialized)
final class PeerHabitsTests {
    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let nginx: NginxServer

    init() throws {
        (www, out, nginx) = try NginxServer.withScratchDirectories()
    }

    private func json(_ result: TestProcess.Result, _ field: String) -> Int? {
        guard let range = result.stdout.range(of: "\"\(field)\":") else { return nil }
        return Int(result.stdout[range.upperBound...].prefix { $0.isNumber })
    }

    @Test func aria2FlagsMapOntoConnectionsAndCurlFlagsAreAccepted() throws {
        let source = try www.randomFile("a.bin", size: 8 << 20)
        let split = try runCLI([nginx.baseURL + "/a.bin", "-o", out.file("a.bin"), "-x", "4", "-s", "8", "--json",
                                "--limit-rate", "100M", "--min-segment", "1M"])
        #expect(split.status == 0, "\(split.stderr)")
        #expect(json(split, "connections") == 4, "-x 4 -s 8 gives 4 connections: \(split.stdout.prefix(400))")
        #expect(try Checksums.sha256sum(out.file("a.bin")) == Checksums.sha256sum(source))
        // -O: the URL's name, in the current directory (here -d).
        let remote = try runCLI([nginx.baseURL + "/a.bin", "-O", "-d", out.file("o")])
        #expect(remote.status == 0, "\(remote.stderr)")
        #expect(FileManager.default.fileExists(atPath: out.file("o/a.bin")))
        #expect(try runCLI([nginx.baseURL + "/a.bin", "-O", "-o", out.file("x")]).status == 2)
        // -c: curl -C - / wget -c, onto a file holding the first bytes.
        let head = try FileHandle(forReadingFrom: URL(fileURLWithPath: source)).readData(ofLength: 3 << 20)
        try head.write(to: URL(fileURLWithPath: out.file("c.bin")))
        let continued = try runCLI([nginx.baseURL + "/a.bin", "-o", out.file("c.bin"), "-c"])
        #expect(continued.status == 0, "\(continued.stderr)")
        #expect(try Checksums.sha256sum(out.file("c.bin")) == Checksums.sha256sum(source))
        // --limit-rate is --max-speed: the same validation.
        let tooSlow = try runCLI([nginx.baseURL + "/a.bin", "-o", out.file("s.bin"), "--limit-rate", "10"])
        #expect(tooSlow.status == 2 && tooSlow.stderr.contains("at least 1K"), "\(tooSlow.stderr)")
    }

    @Test func resolveConnectToAndIPVersionPinWhereConnectionsGo() throws {
        let source = try www.randomFile("r.bin", size: 2 << 20)
        let digest = try Checksums.sha256sum(source)
        let resolved = try runCLI(["http://cdn.rangefetch.test:\(nginx.port)/r.bin", "-o", out.file("r1.bin"),
                                   "--resolve", "cdn.rangefetch.test:\(nginx.port):127.0.0.1"])
        #expect(resolved.status == 0, "\(resolved.stderr)")
        #expect(try Checksums.sha256sum(out.file("r1.bin")) == digest)
        let redirected = try runCLI(["http://cdn.rangefetch.test/r.bin", "-o", out.file("r2.bin"),
                                     "--connect-to", "cdn.rangefetch.test:80:127.0.0.1:\(nginx.port)"])
        #expect(redirected.status == 0, "\(redirected.stderr)")
        #expect(try Checksums.sha256sum(out.file("r2.bin")) == digest)
        // nginx listens on 127.0.0.1 only: localhost works over IPv4 and not over IPv6.
        let four = try runCLI(["http://localhost:\(nginx.port)/r.bin", "-o", out.file("r4.bin"), "-4"])
        #expect(four.status == 0, "\(four.stderr)")
        let six = try runCLI(["http://localhost:\(nginx.port)/r.bin", "-o", out.file("r6.bin"), "-6", "--max-tries", "1"])
        #expect(six.status == 3, "\(six.stderr)")
        #expect(try runCLI(["http://localhost/r.bin", "-4", "-6"]).status == 2)
    }

    @Test func aProxyIsUsedAndNamedWhenItIsDown() throws {
        let server = try FaultServer()
        defer { server.stop() }
        // The fault server answers absolute-form requests, as a forward proxy would.
        let size: Int64 = 3 << 20
        let target = "http://files.rangefetch.test/data/\(size)/p.bin"
        let proxied = try runCLI([target, "-o", out.file("p.bin"), "--proxy", "http://127.0.0.1:\(server.port)"])
        #expect(proxied.status == 0, "\(proxied.stderr)")
        try server.expectFile(out.file("p.bin"), size: size, sourceLocation: #_sourceLocation)
        let dead = try freeLoopbackPort()
        let environment = ["http_proxy": "http://127.0.0.1:\(dead)", "https_proxy": "http://127.0.0.1:\(dead)"]
        let down = try runCLI([target, "-o", out.file("q.bin"), "--max-tries", "1"], environment: environment)
        #expect(down.status == 3)
        #expect(down.stderr.contains("could not connect to the proxy http://127.0.0.1:\(dead) (from http_proxy)"), "\(down.stderr)")
        // --noproxy: the local server is reached directly despite the dead proxy.
        let direct = try runCLI([nginx.baseURL + "/none.bin", "-o", out.file("n.bin"), "--noproxy", "127.0.0.1"], environment: environment)
        #expect(direct.stderr.contains("404"), "\(direct.stderr)")
    }

    @Test func netrcSuppliesTheLoginAndCurlsCABundleVariableIsRead() throws {
        let server = try FaultServer()
        defer { server.stop() }
        let url = server.dataURL(size: 1 << 20, "authb64=dTpzM2NyZXQ=") // u:s3cret
        try "machine 127.0.0.1 login u password s3cret\n".write(toFile: out.file("netrc"), atomically: true, encoding: .utf8)
        let without = try runCLI([url, "-o", out.file("n0.bin"), "--max-tries", "1", "--no-netrc"])
        #expect(without.status == 3 && without.stderr.contains("401"), "\(without.stderr)")
        let with = try runCLI([url, "-o", out.file("n1.bin"), "--netrc-file", out.file("netrc")])
        #expect(with.status == 0, "\(with.stderr)")
        // ~/.netrc by default, as wget2 and aria2c read it.
        let home = try runCLI([url, "-o", out.file("n2.bin")], environment: ["HOME": out.path])
        try FileManager.default.copyItem(atPath: out.file("netrc"), toPath: out.file(".netrc"))
        let homeAfter = try runCLI([url, "-o", out.file("n3.bin")], environment: ["HOME": out.path])
        #expect(home.status == 3 && homeAfter.status == 0, "\(home.stderr) / \(homeAfter.stderr)")
        // CURL_CA_BUNDLE names a CA bundle like --cacert: an unreadable one fails the TLS set-up.
        let tlsDirectory = try TemporaryDirectory("rf-ca")
        let certificate = try selfSignedCertificate(in: tlsDirectory)
        let tls = try NginxServer(docroot: www.path, certificate: certificate)
        defer { tls.stop() }
        try www.randomFile("t.bin", size: 1 << 20)
        let trusted = try runCLI(["https://127.0.0.1:\(tls.tlsPort ?? 0)/t.bin", "-o", out.file("t.bin")], environment: ["CURL_CA_BUNDLE": certificate.cert])
        #expect(trusted.status == 0, "\(trusted.stderr)")
        let untrusted = try runCLI(["https://127.0.0.1:\(tls.tlsPort ?? 0)/t.bin", "-o", out.file("u.bin"), "--max-tries", "1"])
        #expect(untrusted.status == 3, "\(untrusted.stderr)")
    }

    /// OpenSSL's variables are trusted beside curl's: a machine-wide CURL_CA_BUNDLE (as many
    /// images set) does not hide the SSL_CERT_FILE a user sets, and SSL_CERT_DIR is read.
    @Test func sslCertFileAndSslCertDirAreTrustedBesideAMachineWideBundle() throws {
        let tlsDirectory = try TemporaryDirectory("rf-ca")
        let certificate = try selfSignedCertificate(in: tlsDirectory)
        // The machine-wide bundle: another CA (another subject, so OpenSSL's lookup by subject
        // does not stop at it before the directory).
        let otherDirectory = try TemporaryDirectory("rf-ca-other")
        let machineWide = otherDirectory.file("ca.pem")
        let made = try TestProcess.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                                                            "-subj", "/CN=machine-wide CA", "-keyout", otherDirectory.file("ca.key"), "-out", machineWide])
        #expect(made.status == 0, "\(made.stderr)")
        let tls = try NginxServer(docroot: www.path, certificate: certificate)
        defer { tls.stop() }
        let source = try www.randomFile("t.bin", size: 1 << 20)
        let url = "https://127.0.0.1:\(tls.tlsPort ?? 0)/t.bin"
        let none = ["CURL_CA_BUNDLE": "", "SSL_CERT_FILE": "", "SSL_CERT_DIR": ""]
        let file = try runCLI([url, "-o", out.file("f.bin"), "--max-tries", "1"],
                              environment: none.merging(["CURL_CA_BUNDLE": machineWide, "SSL_CERT_FILE": certificate.cert]) { $1 })
        #expect(file.status == 0, "\(file.stderr)")
        #expect(try Checksums.sha256sum(out.file("f.bin")) == Checksums.sha256sum(source))
        // A hashed directory, as `openssl rehash` makes it.
        let hash = try TestProcess.run("/usr/bin/openssl", ["x509", "-hash", "-noout", "-in", certificate.cert])
        let hashed = try TemporaryDirectory("rf-ca-dir")
        try FileManager.default.copyItem(atPath: certificate.cert,
                                         toPath: hashed.file(hash.stdout.trimmingCharacters(in: .whitespacesAndNewlines) + ".0"))
        let directory = try runCLI([url, "-o", out.file("d.bin"), "--max-tries", "1"],
                                   environment: none.merging(["CURL_CA_BUNDLE": machineWide, "SSL_CERT_DIR": hashed.path]) { $1 })
        #expect(directory.status == 0, "\(directory.stderr)")
        let untrusted = try runCLI([url, "-o", out.file("u.bin"), "--max-tries", "1"],
                                   environment: none.merging(["CURL_CA_BUNDLE": machineWide]) { $1 })
        #expect(untrusted.status == 3 && untrusted.stderr.contains("not trusted"), "\(untrusted.stderr)")
        // --cacert alone decides: the variables are not read.
        let given = try runCLI([url, "-o", out.file("g.bin"), "--max-tries", "1", "--cacert", machineWide],
                               environment: none.merging(["SSL_CERT_FILE": certificate.cert]) { $1 })
        #expect(given.status == 3, "\(given.stderr)")
    }

    @Test func aConfigFileSetsDefaultsTheCommandLineOverrides() throws {
        try www.randomFile("f.bin", size: 4 << 20)
        let config = out.file("xdg/rangefetch/config")
        try FileManager.default.createDirectory(atPath: out.file("xdg/rangefetch"), withIntermediateDirectories: true)
        try "# defaults\nconnections 3\n--max-tries=2\n".write(toFile: config, atomically: true, encoding: .utf8)
        let environment = ["XDG_CONFIG_HOME": out.file("xdg")]
        let fromConfig = try runCLI([nginx.baseURL + "/f.bin", "-o", out.file("a.bin"), "--json"], environment: environment)
        #expect(fromConfig.status == 0 && json(fromConfig, "connections") == 3, "\(fromConfig.stdout.prefix(300))")
        let overridden = try runCLI([nginx.baseURL + "/f.bin", "-o", out.file("b.bin"), "--json", "-n", "5"], environment: environment)
        #expect(json(overridden, "connections") == 5)
        let ignored = try runCLI([nginx.baseURL + "/f.bin", "-o", out.file("c.bin"), "--json", "-n", "auto", "--no-config"],
                                 environment: environment)
        // -n auto reports its ceiling: 64 connections unless --max-connections says otherwise.
        #expect(json(ignored, "connections") == 64)
        try "connections 3\nbogus 4\n".write(toFile: out.file("bad.conf"), atomically: true, encoding: .utf8)
        let bad = try runCLI(["--config", out.file("bad.conf"), nginx.baseURL + "/f.bin", "-o", out.file("d.bin")])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("config file \(out.file("bad.conf")), line 2"), "\(bad.stderr)")
        #expect(try runCLI(["--config", out.file("missing.conf"), nginx.baseURL + "/f.bin"]).status == 2)
        #expect(nginx.accessLog().filter { $0.path == "/f.bin" && $0.method == "GET" }.count >= 3)
    }

    static let peerFlags: [(String, String)] = [
        ("--retry", "--max-tries"), ("-P", "-d DIR"), ("--no-check-certificate", "--insecure"), ("-C", "--continue"),
    ]

    @Test(arguments: peerFlags)
    func peerFlagsNameTheirEquivalentAndNeverADestructiveOne(flag: String, equivalent: String) throws {
        let result = try runCLI([flag, "3", "http://127.0.0.1:9/x"])
        #expect(result.status == 2)
        #expect(result.stderr.contains(equivalent), "\(result.stderr)")
        #expect(!result.stderr.contains("--restart") && !result.stderr.contains("--overwrite"), "\(result.stderr)")
        let typo = try runCLI(["--restar", "http://127.0.0.1:9/x"])
        #expect(typo.status == 2 && !typo.stderr.contains("Did you mean '--restart'"), "\(typo.stderr)")
    }
}

/// Values glued to short options, as getopt reads them (curl's `-o-`, aria2c's `-x16 -s16`,
/// wget's `-O-`).
@Suite(.serialized)
final class GluedOptionTests {
    let www: TemporaryDirectory
    let out: TemporaryDirectory
    let nginx: NginxServer

    init() throws {
        (www, out, nginx) = try NginxServer.withScratchDirectories()
    }

    private func connections(_ result: TestProcess.Result) -> Int? {
        guard let range = result.stdout.range(of: "\"connections\":") else { return nil }
        return Int(result.stdout[range.upperBound...].prefix { $0.isNumber })
    }

    @Test func gluedValuesWorkAsTheirSeparateForms() throws {
        let source = try www.randomFile("g.bin", size: 4 << 20)
        let digest = try Checksums.sha256sum(source)
        let url = nginx.baseURL + "/g.bin"
        let fixed = try runCLI([url, "-n3", "-o", out.file("n.bin"), "--json", "--min-segment", "1M"])
        #expect(fixed.status == 0 && connections(fixed) == 3, "\(fixed.stderr) \(fixed.stdout.prefix(300))")
        let aria2 = try runCLI([url, "-x2", "-s8", "-o", out.file("x.bin"), "--json", "--min-segment", "1M"])
        #expect(aria2.status == 0 && connections(aria2) == 2, "\(aria2.stderr) \(aria2.stdout.prefix(300))")
        let cluster = try runCLI([url, "-qn3", "-d" + out.file("dir")])
        #expect(cluster.status == 0 && cluster.stderr.isEmpty, "\(cluster.stderr)")
        #expect(try Checksums.sha256sum(out.file("dir/g.bin")) == digest)
        let text = String(repeating: "0123456789abcdef", count: 1 << 16) // 1 MiB of ASCII: stdout decodes as it is
        try text.write(toFile: www.file("t.txt"), atomically: true, encoding: .utf8)
        for stdout in ["-o-", "-O-"] {
            let streamed = try runCLI([nginx.baseURL + "/t.txt", stdout, "-q"])
            #expect(streamed.status == 0, "\(stdout): \(streamed.stderr)")
            #expect(streamed.stdout == text, "\(stdout): \(streamed.stdout.utf8.count) bytes on stdout")
        }
        try www.randomFile("h.bin", size: 1 << 20)
        let batch = try runCLI([url, nginx.baseURL + "/h.bin", "-j2", "-d" + out.file("batch"), "-q"])
        #expect(batch.status == 0, "\(batch.stderr)")
        #expect(try Checksums.sha256sum(out.file("batch/g.bin")) == digest)
        // A negative count is a value, and its message says what is expected (not "Missing value").
        let negative = try runCLI([url, "-n", "-1"])
        #expect(negative.status == 2 && negative.stderr.contains("between 1 and 64"), "\(negative.stderr)")
        // After --, nothing is an option.
        let ended = try runCLI(["-o", out.file("e.bin"), "--", "-n16"])
        #expect(ended.status == 2 && ended.stderr.contains("-n16"), "\(ended.stderr)")
    }

    /// aria2c's `-d DIR -o NAME` (curl's `--output-dir DIR -o NAME`): NAME inside DIR.
    @Test func dashOAndDashDJoinAndADirectoryNameIsRefusedBeforeItIsMade() throws {
        let source = try www.randomFile("j.bin", size: 1 << 20)
        let url = nginx.baseURL + "/j.bin"
        let joined = try runCLI([url, "-d", out.file("dl"), "-o", "name.bin", "-q"])
        #expect(joined.status == 0, "\(joined.stderr)")
        #expect(try Checksums.sha256sum(out.file("dl/name.bin")) == Checksums.sha256sum(source))
        let nested = try runCLI([url, "-o", "sub/n.bin", "-d" + out.file("dl"), "-q"])
        #expect(nested.status == 0, "\(nested.stderr)")
        #expect(FileManager.default.fileExists(atPath: out.file("dl/sub/n.bin")))
        // -o naming a directory (a trailing /) is refused before anything is made.
        let directory = try runCLI([url, "-o", out.file("newdir") + "/"])
        #expect(directory.status == 2 && directory.stderr.contains("-d"), "\(directory.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.file("newdir")))
    }

    /// Every short option that takes a value, as `--experimental-dump-help` lists them, takes it
    /// glued: a new one missing from `CommandSyntax` fails here.
    @Test func everyShortOptionTakesAGluedValue() throws {
        let dump = try runCLI(["--experimental-dump-help"])
        let tool = try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any]
        let subcommands = ((tool?["command"] as? [String: Any])?["subcommands"] as? [[String: Any]]) ?? []
        let file = try www.randomFile("v.bin", size: 1000)
        let samples: [Character: String] = ["o": out.file("o.bin"), "d": out.path, "i": out.file("list"),
                                            "H": "X-A:1", "u": "a:b", "A": "agent"]
        var checked = 0
        for command in subcommands {
            guard let name = command["commandName"] as? String, ["get", "bench", "verify"].contains(name) else { continue }
            for argument in (command["arguments"] as? [[String: Any]]) ?? [] where argument["kind"] as? String == "option" {
                for entry in (argument["names"] as? [[String: String]]) ?? [] where entry["kind"] == "short" {
                    guard let letter = entry["name"]?.first else { continue }
                    let glued = "-\(letter)" + (samples[letter] ?? "1")
                    let rest = name == "verify" ? [file, "--print-digest", "sha256"]
                                                : ["http://127.0.0.1:9/x", "--max-tries", "1"]
                    let result = try runCLI([name, glued] + rest)
                    for misread in ["give the URL", "Missing expected argument", "Unknown option", "Missing value",
                                    "'http://127.0.0.1:9/x' is invalid"] {
                        #expect(!result.stderr.contains(misread), "\(name) \(glued): \(result.stderr)")
                    }
                    checked += 1
                }
            }
        }
        #expect(checked >= 15, "only \(checked) short options found in the help dump")
    }
}
