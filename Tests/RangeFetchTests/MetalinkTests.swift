import Testing
@testable import RangeFetch

/// ``Metalink/parse(_:origin:)``: good documents as a table, hostile ones refused or made safe.
struct MetalinkTests {
    static let sha256 = String(repeating: "ab", count: 32)
    static let sha1 = String(repeating: "cd", count: 20)

    static func document(_ file: String, name: String = "f.bin") -> [UInt8] {
        Array("""
        <?xml version="1.0" encoding="UTF-8"?>
        <metalink xmlns="urn:ietf:params:xml:ns:metalink">
          <file name="\(name)">\(file)</file>
        </metalink>
        """.utf8)
    }

    @Test func aFullFileEntryIsRead() throws {
        let metalink = try Metalink.parse(Self.document("""
            <size>3000</size>
            <hash type="sha-256">\(Self.sha256)</hash>
            <hash type="SHA-1">\(Self.sha1.uppercased())</hash>
            <hash type="crc32">00000000</hash>
            <pieces length="1024" type="sha-256">
              <hash>\(Self.sha256)</hash><hash>\(Self.sha256)</hash><hash>\(Self.sha256)</hash>
            </pieces>
            <url priority="2" location="de">http://b.example/f</url>
            <url>https://c.example/f</url>
            <url priority="1">http://a.example/f</url>
            <url priority="1">ftp://a.example/f</url>
            <metaurl mediatype="torrent">http://a.example/f.torrent</metaurl>
            """), origin: "x.meta4")
        #expect(metalink.name == "f.bin")
        #expect(metalink.size == 3000)
        #expect(metalink.digests.map(\.description) == ["sha256=\(Self.sha256)", "sha1=\(Self.sha1)"])
        #expect(metalink.pieces?.length == 1024 && metalink.pieces?.digests.count == 3)
        #expect(metalink.pieces?.range(2, size: 3000) == ByteRange(2048, 3000))
        #expect(metalink.locations.map(\.url) == ["http://a.example/f", "http://b.example/f", "https://c.example/f"])
        #expect(metalink.locations[1].country == "de" && metalink.locations[1].priority == 2)
        #expect(metalink.locations[2].priority == Metalink.lowestPriority)
        #expect(metalink.ignored.count == 2, "\(metalink.ignored)")  // crc32, ftp:
        #expect(metalink.ignored.contains { $0.contains("ftp://a.example/f") })
    }

    /// A hostile or odd name is cut to its last component, never a path out of the directory.
    @Test(arguments: [
        ("../../etc/x", "x"), ("/etc/passwd", "passwd"), ("dir/sub/f.iso", "f.iso"),
        (".bashrc", "bashrc"), ("  f.iso ", "f.iso"), ("..\\..\\win.ini", "win.ini"),
    ])
    func namesAreMadeSafe(name: String, saved: String) throws {
        let metalink = try Metalink.parse(Self.document("<url>http://a.example/f</url>", name: name), origin: "x")
        #expect(metalink.name == saved)
    }

    /// Each document refused, with what its message says.
    @Test(arguments: [
        ("<url>file:///etc/passwd</url>", "no http:// or https://"),
        ("", "no http:// or https://"),
        ("<size>-1</size><url>http://a/f</url>", "not a byte count"),
        ("<hash type=\"sha-256\">abc</hash><url>http://a/f</url>", "64 hex digits"),
        ("<size>3000</size><pieces length=\"1024\" type=\"sha-256\"><hash>\(sha256)</hash></pieces><url>http://a/f</url>",
         "has 1 hashes"),
        ("<pieces length=\"1024\" type=\"sha-256\"><hash>\(sha256)</hash></pieces><url>http://a/f</url>", "without a <size>"),
        ("<size>10</size><pieces length=\"0\" type=\"sha-256\"></pieces><url>http://a/f</url>", "no positive length"),
        ("<url priority=\"x\">http://a/f</url>", "priority"),
    ])
    func badEntriesAreRefused(file: String, says: String) {
        #expect {
            try Metalink.parse(Self.document(file), origin: "x.meta4")
        } throws: { error in
            let error = error as? DownloadError
            return error?.code == .invalidOption && error?.message.contains(says) == true && error?.message.contains("x.meta4") == true
        }
    }

    @Test(arguments: [
        ("""
         <?xml version="1.0"?>
         <!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
         <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
         <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="&lol3;"><url>http://a/f</url></file></metalink>
         """, "document type"),
        ("""
         <?xml version="1.0"?>
         <!DOCTYPE m [<!ENTITY x SYSTEM "file:///etc/passwd">]>
         <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="f"><url>http://a/&x;</url></file></metalink>
         """, "document type"),
        ("<metalink><file name=\"f\"><url>http://a/f</url></metalink>", "not well-formed"),
        ("<metalink/>", "no <file>"),
        ("<feed/>", "not a Metalink 4"),
        ("<metalink><file name=\"a\"><url>http://a/a</url></file><file name=\"b\"><url>http://a/b</url></file></metalink>", "2 files"),
        ("<metalink><file name=\"..\"><url>http://a/a</url></file></metalink>", "no usable name"),
    ])
    func hostileDocumentsAreRefused(text: String, says: String) {
        #expect {
            try Metalink.parse(Array(text.utf8), origin: "x.meta4")
        } throws: { error in
            (error as? DownloadError)?.message.contains(says) == true
        }
    }

    @Test(arguments: [
        ("<!DOCTYPE m><m/>", true), ("<?xml version=\"1.0\"?>\n<!-- <m> --><!DOCTYPE m []><m/>", true),
        ("<?xml version=\"1.0\"?><m><![CDATA[<!DOCTYPE]]></m>", false), ("<m/>", false), ("", false),
    ])
    func aDocumentTypeIsFoundInTheProlog(text: String, found: Bool) {
        #expect(XMLTree.prologDeclaresDocumentType(Array(text.utf8)) == found)
    }

    @Test func aHugeDocumentIsRefusedUnread() {
        let huge = [UInt8](repeating: UInt8(ascii: " "), count: Metalink.maximumBytes + 1)
        #expect {
            try Metalink.parse(huge, origin: "x.meta4")
        } throws: { error in
            (error as? DownloadError)?.message.contains("larger than 16 MiB") == true
        }
    }
}
