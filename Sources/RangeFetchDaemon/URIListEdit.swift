/// aria2's `changeUri` on one file's URI list, as a pure value: the deletions first (each URI
/// in `delete` takes away one copy of it, the first found), then `add` inserted at `position`
/// (0 is first; past the end, or absent, appends).
///
/// | uris | delete | add | position | result | deleted, added |
/// |---|---|---|---|---|---|
/// | a b | a | c | – | b c | 1, 1 |
/// | a a b | a | – | – | a b | 1, 0 |
/// | a b | x | – | – | a b | 0, 0 |
/// | a b | – | c | 0 | c a b | 0, 1 |
/// | a | a | – | – | refused: no URI would be left |
struct URIListEdit: Equatable {
    var uris: [String]
    var deleted: Int
    var added: Int

    enum Refusal: Error, Equatable {
        case nothingLeft
    }

    init(_ uris: [String], delete: [String], add: [String], position: Int?) throws(Refusal) {
        var list = uris
        var deleted = 0
        for uri in delete {
            guard let index = list.firstIndex(of: uri) else { continue }
            list.remove(at: index)
            deleted += 1
        }
        let at = min(max(0, position ?? list.count), list.count)
        list.insert(contentsOf: add, at: at)
        guard !list.isEmpty else { throw .nothingLeft }
        self.uris = list
        self.deleted = deleted
        self.added = add.count
    }
}
