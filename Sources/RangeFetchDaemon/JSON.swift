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
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// The value as compact JSON: keys sorted, `/` not escaped, text other than `"`, `\\` and
    /// control characters written as it is (what `JSONEncoder` with `.sortedKeys` and
    /// `.withoutEscapingSlashes` writes, at a fraction of its cost: answers to front-ends
    /// polling hundreds of downloads are written here while the downloads compete for the CPU).
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(into: &out)
        return out
    }

    func write(into out: inout [UInt8]) {
        switch self {
        case .null: out += Self.nullText
        case .bool(let bool): out += bool ? Self.trueText : Self.falseText
        case .number(let number): Self.write(number, into: &out)
        case .string(let string): Self.write(string, into: &out)
        case .array(let array):
            out.append(UInt8(ascii: "["))
            for (index, element) in array.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                element.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            for (index, key) in object.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.write(key, into: &out)
                out.append(UInt8(ascii: ":"))
                object[key].unsafelyUnwrapped.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static let nullText = Array("null".utf8), trueText = Array("true".utf8), falseText = Array("false".utf8)
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Whole numbers without a fraction (ids, aria2's few plain numbers); JSON has no NaN or
    /// infinity, so those are `null`.
    private static func write(_ number: Double, into out: inout [UInt8]) {
        if number.rounded() == number, abs(number) < 1e15 {
            out += String(Int64(number)).utf8
        } else if number.isFinite {
            out += String(number).utf8
        } else {
            out += nullText
        }
    }

    private static func write(_ string: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        defer { out.append(UInt8(ascii: "\"")) }
        guard string.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            out += string.utf8
            return
        }
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x08: out += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x0C: out += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0..<0x20:
                out += Array("\\u00".utf8)
                out += [hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]]
            default: out.append(byte)
            }
        }
    }

    /// aria2 writes every number as a string.
    static func count(_ value: some BinaryInteger) -> JSON { .string(String(value)) }
}
