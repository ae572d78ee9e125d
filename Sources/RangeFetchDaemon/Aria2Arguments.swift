/// A call's parameters read by position, as aria2 reads them: a wrong type is a failure naming
/// the method and the parameter.
struct Aria2Arguments: Sendable {
    let method: String
    let params: [JSON]

    func string(_ index: Int) throws(RPCFailure) -> String {
        guard index < params.count, let text = params[index].string else {
            throw RPCFailure("\(method): parameter \(index + 1) must be a string")
        }
        return text
    }

    /// A list of strings (addUri's URIs).
    func strings(_ index: Int) throws(RPCFailure) -> [String] {
        guard index < params.count, let items = params[index].array else {
            throw RPCFailure("\(method): parameter \(index + 1) must be an array of strings")
        }
        var strings: [String] = []
        for item in items {
            guard let text = item.string else { throw RPCFailure("\(method): parameter \(index + 1) must be an array of strings") }
            strings.append(text)
        }
        return strings
    }

    /// An integer, as a number or a string; `nil` when absent.
    func integer(_ index: Int) throws(RPCFailure) -> Int? {
        guard index < params.count else { return nil }
        guard let value = params[index].integer else { throw RPCFailure("\(method): parameter \(index + 1) must be an integer") }
        return value
    }

    /// An options object: each value a string (a list, as `header` is, joined by newlines);
    /// absent: none.
    func options(_ index: Int) throws(RPCFailure) -> [String: String] {
        guard index < params.count else { return [:] }
        guard let object = params[index].object else { throw RPCFailure("\(method): parameter \(index + 1) must be an options object") }
        var options: [String: String] = [:]
        for (key, value) in object {
            switch value {
            case .string(let text): options[key] = text
            case .number: options[key] = value.integer.map(String.init) ?? "\(value)"
            case .bool(let flag): options[key] = flag ? "true" : "false"
            case .array(let items): options[key] = items.compactMap(\.string).joined(separator: "\n")
            default: throw RPCFailure("\(method): option \(key) must be a string")
            }
        }
        return options
    }

    /// The keys a status call asks for; `nil`: all.
    func keys(_ index: Int) throws(RPCFailure) -> [String]? {
        guard index < params.count else { return nil }
        return try strings(index)
    }
}
