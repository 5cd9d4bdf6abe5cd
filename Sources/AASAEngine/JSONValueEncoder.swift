// Encodable types to `JSONValue`: the admin API's and the CLI's JSON shapes are declared as
// Codable structs, and this encoder keeps what the API promises of them: members in declaration
// order (what `encode(to:)` writes first comes first) and every optional member present, `null`
// when absent, rather than left out as `JSONEncoder` does.

/// A value with a JSON form of its own (a fixed-point number, a timestamp, an embedded document):
/// `JSONValueEncoder` takes `jsonValue` as it is; other encoders get it through `encode(to:)`.
public protocol JSONValueRepresentable: Encodable {
    var jsonValue: JSONValue { get }
}

extension JSONValueRepresentable {
    public func encode(to encoder: any Encoder) throws {
        try jsonValue.encode(to: encoder)
    }
}

extension JSONValue: Encodable {
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .number(let number):
            var container = encoder.singleValueContainer()
            if let integer = Int64(number.text) { try container.encode(integer) } else { try container.encode(number.doubleValue) }
        case .string(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .array(let elements):
            var container = encoder.unkeyedContainer()
            for element in elements { try container.encode(element) }
        case .object(let object):
            var container = encoder.container(keyedBy: MemberKey.self)
            for member in object.uniqueMembers { try container.encode(member.value, forKey: MemberKey(member.key)) }
        }
    }

    private struct MemberKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(_ key: String) { stringValue = key }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

extension JSONValue: JSONValueRepresentable {
    public var jsonValue: JSONValue { self }
}

/// A number written with a fixed count of decimals (`durationMs` 6.7, `delaySeconds` 24.000).
public struct FixedPoint: JSONValueRepresentable, Sendable, Equatable {
    public let value: Double
    public let decimals: Int
    public init(_ value: Double, decimals: Int) {
        self.value = value
        self.decimals = decimals
    }
    /// The number's text, rounded half away from zero (no negative zero); nil when not finite.
    public var text: String? {
        guard value.isFinite else { return nil }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (value.magnitude * scale).rounded(.toNearestOrAwayFromZero)
        guard scaled < 9e18 else { return String(value) }
        var digits = String(Int64(scaled))
        if digits.count <= decimals { digits = String(repeating: "0", count: decimals + 1 - digits.count) + digits }
        let sign = value < 0 && scaled > 0 ? "-" : ""
        guard decimals > 0 else { return sign + digits }
        return sign + digits.dropLast(decimals) + "." + digits.suffix(decimals)
    }

    /// Non-finite values are `null`.
    public var jsonValue: JSONValue { text.map { .number(JSONNumber($0)) } ?? .null }
}

/// Encodes an `Encodable` value into a `JSONValue`.
public struct JSONValueEncoder {
    public init() {}

    public func encode(_ value: some Encodable) throws -> JSONValue {
        let slot = Slot()
        try slot.store(value, path: [])
        return slot.value
    }

    /// The compact JSON text of `value` (what the admin API answers).
    public func string(_ value: some Encodable) throws -> String {
        JSONWriter.string(try encode(value))
    }
}

/// One value under construction; containers hold their members as slots so that a nested
/// container handed out earlier still writes into its place. Members and elements are appended
/// in place (a release answer lists thousands).
private final class Slot {
    enum Kind {
        case value
        case object
        case array
    }
    private(set) var kind = Kind.value
    private var scalar = JSONValue.null
    private var members: [(key: String, slot: Slot)] = []
    private var elements: [Slot] = []

    var value: JSONValue {
        switch kind {
        case .value: return scalar
        case .object: return .object(JSONObject(members.map { JSONMember($0.key, $0.slot.value) }))
        case .array: return .array(elements.map(\.value))
        }
    }

    var count: Int { kind == .array ? elements.count : 0 }

    func set(_ value: JSONValue) {
        kind = .value
        scalar = value
    }

    func makeObject() {
        guard kind != .object else { return }
        kind = .object
        members = []
    }

    func makeArray() {
        guard kind != .array else { return }
        kind = .array
        elements = []
    }

    func store(_ value: some Encodable, path: [any CodingKey]) throws {
        if let own = value as? any JSONValueRepresentable {
            set(own.jsonValue)
        } else {
            try value.encode(to: SlotEncoder(slot: self, codingPath: path))
        }
    }

    func appendMember(_ key: String) -> Slot {
        makeObject()
        let slot = Slot()
        members.append((key, slot))
        return slot
    }

    func appendElement() -> Slot {
        makeArray()
        let slot = Slot()
        elements.append(slot)
        return slot
    }

    static func number(_ value: some BinaryInteger) -> JSONValue { .number(JSONNumber(String(value))) }
    static func number(_ value: some BinaryFloatingPoint & LosslessStringConvertible) throws -> JSONValue {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, EncodingError.Context(codingPath: [], debugDescription: "JSON has no \(value)"))
        }
        return .number(JSONNumber(String(value)))
    }
}

private struct SlotEncoder: Encoder {
    let slot: Slot
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        slot.makeObject()
        return KeyedEncodingContainer(KeyedSlotContainer<Key>(slot: slot, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        slot.makeArray()
        return UnkeyedSlotContainer(slot: slot, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleSlotContainer(slot: slot, codingPath: codingPath)
    }
}

/// An object's members; a nil optional is written as `null` (the `encodeIfPresent` overloads).
private struct KeyedSlotContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let slot: Slot
    let codingPath: [any CodingKey]

    private func put(_ value: JSONValue, _ key: Key) { slot.appendMember(key.stringValue).set(value) }

    mutating func encodeNil(forKey key: Key) throws { put(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { put(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { put(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { put(try Slot.number(value), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { put(try Slot.number(value), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { put(Slot.number(value), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { put(Slot.number(value), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { put(Slot.number(value), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { put(Slot.number(value), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { put(Slot.number(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { put(Slot.number(value), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { put(Slot.number(value), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { put(Slot.number(value), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { put(Slot.number(value), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { put(Slot.number(value), key) }
    mutating func encode(_ value: some Encodable, forKey key: Key) throws {
        try slot.appendMember(key.stringValue).store(value, path: codingPath + [key])
    }

    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { try encodeOrNull(value, key) }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { try encodeOrNull(value, key) }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { try encodeOrNull(value, key) }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { try encodeOrNull(value, key) }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { try encodeOrNull(value, key) }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { try encodeOrNull(value, key) }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { try encodeOrNull(value, key) }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { try encodeOrNull(value, key) }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { try encodeOrNull(value, key) }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { try encodeOrNull(value, key) }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { try encodeOrNull(value, key) }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { try encodeOrNull(value, key) }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { try encodeOrNull(value, key) }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { try encodeOrNull(value, key) }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws { try encodeOrNull(value, key) }

    private mutating func encodeOrNull<T: Encodable>(_ value: T?, _ key: Key) throws {
        if let value { try encode(value, forKey: key) } else { put(.null, key) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let member = slot.appendMember(key.stringValue)
        member.makeObject()
        return KeyedEncodingContainer(KeyedSlotContainer<NestedKey>(slot: member, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let member = slot.appendMember(key.stringValue)
        member.makeArray()
        return UnkeyedSlotContainer(slot: member, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder { SlotEncoder(slot: slot.appendMember("super"), codingPath: codingPath) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { SlotEncoder(slot: slot.appendMember(key.stringValue), codingPath: codingPath + [key]) }
}

private struct UnkeyedSlotContainer: UnkeyedEncodingContainer {
    let slot: Slot
    let codingPath: [any CodingKey]
    var count: Int { slot.count }

    mutating func encodeNil() throws { slot.appendElement().set(.null) }
    mutating func encode(_ value: some Encodable) throws { try slot.appendElement().store(value, path: codingPath) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let element = slot.appendElement()
        element.makeObject()
        return KeyedEncodingContainer(KeyedSlotContainer<NestedKey>(slot: element, codingPath: codingPath))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let element = slot.appendElement()
        element.makeArray()
        return UnkeyedSlotContainer(slot: element, codingPath: codingPath)
    }

    mutating func superEncoder() -> any Encoder { SlotEncoder(slot: slot.appendElement(), codingPath: codingPath) }
}

private struct SingleSlotContainer: SingleValueEncodingContainer {
    let slot: Slot
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { slot.set(.null) }
    mutating func encode(_ value: Bool) throws { slot.set(.bool(value)) }
    mutating func encode(_ value: String) throws { slot.set(.string(value)) }
    mutating func encode(_ value: Double) throws { slot.set(try Slot.number(value)) }
    mutating func encode(_ value: Float) throws { slot.set(try Slot.number(value)) }
    mutating func encode(_ value: Int) throws { slot.set(Slot.number(value)) }
    mutating func encode(_ value: Int8) throws { slot.set(Slot.number(value)) }
    mutating func encode(_ value: Int16) throws { slot.set(Slot.number(value)) }
    mutating func encode(_ value: Int32) throws { slot.set(Slot.number(value)) }
    mutating func encode(_ value: Int64) throws { slot.set(Slot.number(value)) }
    mutating func encode(_ value: UInt) throws { slot.set(Slot.number(value)) }
    mutating func encode(_ value: UInt8) throws { slot.set(Slot.number(value)) }
    mutating func encode(_ value: UInt16) throws { slot.set(Slot.number(value)) }
    mutating func encode(_ value: UInt32) throws { slot.set(Slot.number(value)) }
    mutating func encode(_ value: UInt64) throws { slot.set(Slot.number(value)) }
    mutating func encode(_ value: some Encodable) throws { try slot.store(value, path: codingPath) }
}
