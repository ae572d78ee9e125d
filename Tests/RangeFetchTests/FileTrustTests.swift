import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Which existing files are taken as ours (a partial download to resume, a journal): the table.
struct FileTrustTests {
    @Test(arguments: [
        // (type, owner, links, caller) -> verdict
        (S_IFREG, 0, 1, 0, FileTrust.own),
        (S_IFREG, 1000, 1, 1000, .own),
        (S_IFREG, 65534, 1, 0, .ownedBy(uid: 65534)),
        (S_IFREG, 0, 1, 1000, .ownedBy(uid: 0)),
        (S_IFREG, 0, 2, 0, .linked(count: 2)),
        (S_IFREG, 0, 0, 0, .linked(count: 0)),
        // Another user's file with other links: whose it is comes first.
        (S_IFREG, 65534, 3, 0, .ownedBy(uid: 65534)),
        (S_IFLNK, 0, 1, 0, .symbolicLink),
        (S_IFLNK, 65534, 1, 0, .symbolicLink),
        (S_IFIFO, 0, 1, 0, .notRegular),
        (S_IFDIR, 0, 2, 0, .notRegular),
        (S_IFSOCK, 0, 1, 0, .notRegular),
        (S_IFCHR, 0, 1, 0, .notRegular),
    ] as [(mode_t, uid_t, Int, uid_t, FileTrust)])
    func verdict(type: mode_t, owner: uid_t, links: Int, caller: uid_t, expected: FileTrust) {
        #expect(FileTrust(mode: type | 0o600, owner: owner, links: links, caller: caller) == expected)
    }

    @Test func eachRefusalNamesThePathAndWhatIsWrong() {
        #expect(FileTrust.own.problem(at: "/d/f.part") == nil)
        #expect(FileTrust.symbolicLink.problem(at: "/d/f.part") == "/d/f.part is a symbolic link")
        #expect(FileTrust.notRegular.problem(at: "/d/f.part") == "/d/f.part is not a regular file")
        #expect(FileTrust.ownedBy(uid: 65534).problem(at: "/d/f.part")?.hasPrefix("/d/f.part is owned by uid 65534, not by this user (uid ") == true)
        #expect(FileTrust.linked(count: 2).problem(at: "/d/f.part")?.hasPrefix("/d/f.part has 2 links") == true)
    }
}
