import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// ``DigestSources`` as a table: which sources' requests may be cut before they answer, after
/// the answers seen so far (a response with its own `Content-Digest` is proven only whole: a cut
/// before its head came left it unprovable, dropped and fetched again).
struct DigestSourcesTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        /// Answers seen, in order: source index and whether it carried a digest.
        var answers: [(Int, Bool)]
        /// Source indexes whose unanswered requests may be cut.
        var cuttable: Set<Int>
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "nothing answered yet: any request may be cut", answers: [], cuttable: [0, 1, 2]),
        Case(name: "the main URL answered without a digest: its requests may be cut", answers: [(0, false)], cuttable: [0, 1, 2]),
        Case(name: "a mirror sent a digest: its requests are left whole", answers: [(0, false), (1, true)], cuttable: [0, 2]),
        Case(name: "a source that sent a digest once is not trusted to send none", answers: [(1, true), (1, false)], cuttable: [0, 2]),
        Case(name: "sources that answered without digests may be cut", answers: [(0, false), (1, false)], cuttable: [0, 1, 2]),
    ]

    @Test(arguments: cases)
    func unansweredRequestsOfSourcesThatSentDigestsAreLeftWhole(_ test: Case) {
        var digests = DigestSources()
        for (source, withDigest) in test.answers { digests.answered(SourceID(index: source), withDigest: withDigest) }
        let cuttable = Set((0..<3).filter { digests.mayCutUnanswered(SourceID(index: $0)) })
        #expect(cuttable == test.cuttable)
    }
}
