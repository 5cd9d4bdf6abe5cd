import AASAEngine
import Foundation

/// Reads a command's input file (`-` = standard input).
enum InputFile {
    /// Far above the 131072-byte AASA limit, so an oversized file is still read and diagnosed,
    /// but bounded so a huge or endless input cannot exhaust memory.
    static let readLimit = 8 << 20

    struct Contents {
        let bytes: [UInt8]
        /// The input was longer than `readLimit` and only its start was read.
        let truncated: Bool
    }

    static func read(_ path: String) throws(CLIFailure) -> Contents {
        let handle: FileHandle
        if path == "-" {
            handle = FileHandle.standardInput
        } else {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw .io("cannot read \(path): no such file")
            }
            guard !isDirectory.boolValue else { throw .io("cannot read \(path): it is a directory") }
            do {
                handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            } catch {
                throw .io("cannot read \(path): \(reason(error))")
            }
        }
        do {
            var data = Data()
            while data.count <= readLimit, let chunk = try handle.read(upToCount: 1 << 16), !chunk.isEmpty {
                data.append(chunk)
            }
            let truncated = data.count > readLimit
            return Contents(bytes: Array(truncated ? data.prefix(readLimit) : data), truncated: truncated)
        } catch {
            throw .io("cannot read \(path): \(reason(error))")
        }
    }

    /// Reads and validates an AASA file.
    static func readAASA(_ path: String) throws(CLIFailure) -> AASAFile {
        let contents = try read(path)
        if contents.truncated {
            return AASAFile.oversized(byteCountAtLeast: readLimit)
        }
        return AASAFile.read(contents.bytes)
    }

    /// Reads an AASA file that must at least be a JSON object (validation errors are allowed:
    /// devices read such files too).
    static func readDocument(_ path: String) throws(CLIFailure) -> (AASADocument, AASAFile) {
        let file = try readAASA(path)
        guard let document = file.document else {
            let reason = file.diagnostics.first(where: { $0.severity == .error })?.message ?? "unreadable"
            throw .bad("\(path) is not a usable AASA file: \(reason)")
        }
        return (document, file)
    }

    private static func reason(_ error: Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError,
           underlying.domain == NSPOSIXErrorDomain, let code = POSIXErrorCode(rawValue: Int32(underlying.code)) {
            return String(cString: strerror(code.rawValue))
        }
        return nsError.localizedDescription
    }
}
