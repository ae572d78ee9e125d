import RangeFetchBase

/// What a download has learnt of its sources' `Content-Digest`s, for the one rule on cutting a
/// request short: a response with its own digest is proven only whole, so a cut would leave its
/// bytes unprovable (dropped and fetched again). A request that has not answered yet is left
/// whole when its source has sent a digest before. (Leaving whole every request of a source not
/// heard from yet, the first round and a mirror just joined, stopped a rare refetch but starved
/// joining mirrors of ranges in two mirror tests beside busy loops: not done.) A pure value,
/// tested as a table.
package struct DigestSources: Sendable, Equatable {
    /// Sources that sent a `Content-Digest` we can check.
    private var proving: Set<SourceID> = []
    /// A response from `source` was checked: with a digest or without.
    package mutating func answered(_ source: SourceID, withDigest: Bool) {
        if withDigest { proving.insert(source) }
    }

    /// Whether a request to `source` that has not answered yet may be cut.
    package func mayCutUnanswered(_ source: SourceID) -> Bool {
        !proving.contains(source)
    }

    package init(proving: Set<SourceID> = []) {
        self.proving = proving
    }
}
