import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// When a link at a user's output path is followed: the kernel's protected_symlinks rule, as a table.
struct LinkFollowRuleTests {
    @Test(arguments: [
        // (link owner, directory mode, directory owner, caller) -> may follow
        (65534, 0o1777, 0, 0, false),      // another user's link in /tmp
        (0, 0o1777, 0, 0, true),           // our own link in /tmp
        (1000, 0o1777, 1000, 0, true),     // the directory owner's link
        (65534, 0o0777, 0, 0, true),       // world-writable but not sticky: they could replace the file itself
        (65534, 0o1775, 0, 0, true),       // sticky, not world-writable (a group's directory)
        (65534, 0o0755, 0, 0, true),       // an ordinary directory
        (0, 0o1777, 65534, 1000, false),   // root's link in nobody's /tmp-like directory, for user 1000
    ] as [(uid_t, mode_t, uid_t, uid_t, Bool)])
    func mayFollow(linkOwner: uid_t, directoryMode: mode_t, directoryOwner: uid_t, caller: uid_t, expected: Bool) {
        #expect(LinkFollowRule.mayFollow(linkOwner: linkOwner, directoryMode: S_IFDIR | directoryMode,
                                         directoryOwner: directoryOwner, caller: caller) == expected)
    }
}
