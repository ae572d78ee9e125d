import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// ``PrefixFollower``'s scheduling decisions, a row per sequence of events: each step is what
/// the owner does (under its lock) and what the follower answers.
struct PrefixFollowerTests {
    enum Step: CustomStringConvertible {
        /// The prefix reaches `end`, the owner has got to `done`; expect a drain to be scheduled or not.
        case advance(Int64, done: Int64, schedules: Bool)
        /// The drain, at `done`, asks where to go; expect a target or `nil` (the drain ends).
        case next(done: Int64, to: Int64?)
        case pause
        case fail

        var description: String {
            switch self {
            case .advance(let end, let done, let schedules): "advance(to: \(end), done: \(done)) -> \(schedules)"
            case .next(let done, let to): "next(done: \(done)) -> \(to.map(String.init) ?? "nil")"
            case .pause: "pause"
            case .fail: "fail"
            }
        }
    }

    static let rows: [(String, [Step])] = [
        ("the first advance with work schedules a drain",
         [.advance(10, done: 0, schedules: true)]),
        ("an advance with no work schedules nothing",
         [.advance(0, done: 0, schedules: false), .advance(5, done: 5, schedules: false)]),
        ("while a drain is scheduled another advance only moves the target",
         [.advance(10, done: 0, schedules: true), .advance(20, done: 0, schedules: false), .next(done: 0, to: 20)]),
        ("the target never goes back",
         [.advance(20, done: 0, schedules: true), .advance(10, done: 0, schedules: false), .next(done: 0, to: 20)]),
        ("the drain runs until caught up, then the next advance schedules again",
         [.advance(10, done: 0, schedules: true), .next(done: 0, to: 10), .advance(20, done: 10, schedules: false),
          .next(done: 10, to: 20), .next(done: 20, to: nil), .advance(30, done: 20, schedules: true)]),
        ("caught up, an advance to where it is schedules nothing",
         [.advance(10, done: 0, schedules: true), .next(done: 10, to: nil), .advance(10, done: 10, schedules: false)]),
        ("a failure ends the drain and no drain is scheduled again",
         [.advance(10, done: 0, schedules: true), .fail, .next(done: 0, to: nil), .advance(20, done: 0, schedules: false)]),
        ("a pause (cancelled, stopped) ends the drain; a later advance schedules again",
         [.advance(10, done: 0, schedules: true), .pause, .advance(20, done: 5, schedules: true), .next(done: 5, to: 20)]),
    ]

    @Test(arguments: rows)
    func schedulingDecisions(row: String, steps: [Step]) {
        var follower = PrefixFollower()
        let error = SystemCallError(function: "write", path: "out", errno: 5)
        for (index, step) in steps.enumerated() {
            switch step {
            case .advance(let end, let done, let schedules):
                #expect(follower.advance(to: end, done: done) == schedules, "\(row): step \(index) \(step)")
            case .next(let done, let to):
                #expect(follower.next(done: done) == to, "\(row): step \(index) \(step)")
            case .pause:
                follower.pause()
            case .fail:
                follower.fail(error)
            }
        }
        if steps.contains(where: { if case .fail = $0 { true } else { false } }) {
            #expect(follower.failure?.function == "write", "\(row): the failure is kept")
        } else {
            #expect(follower.failure == nil, "\(row)")
        }
    }
}
