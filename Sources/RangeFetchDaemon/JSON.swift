/// A JSON value as JSON-RPC carries it: parsed with `JSONDecoder` (FoundationEssentials, no
/// ICU), and written back in the same shape.
public enum JSON: Sendable, Equatable, Codable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSON].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSON].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let bool): try container.encode(bool)
        case .number(let number):
            // Whole numbers are written without a fraction (ids, aria2's few plain numbers).
            if number.rounded() == number, abs(number) < 1e15 { try container.encode(Int64(number)) } else { try container.encode(number) }
        case .string(let string): try container.encode(string)
        case .array(let array): try container.encode(array)
        case .object(let object): try container.encode(object)
        }
    }

    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var object: [String: JSON]? {
        if case .object(let value) = self { return value }
        return nil
    }

    public var array: [JSON]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// An integer given as a number or as a string of digits (aria2's clients send both).
    public var integer: Int? {
        switch self {
        case .number(let number) where number.rounded() == number && abs(number) < 1e15: Int(number)
        case .string(let text): Int(text)
        default: nil
        }
    }

    /// The value as compact JSON text.
    public var text: String { String(decoding: RPCMessage.encode(self), as: UTF8.self) }

    /// aria2 writes every number as a string.
    static func count(_ value: some BinaryInteger) -> JSON { .string(String(value)) }
}
