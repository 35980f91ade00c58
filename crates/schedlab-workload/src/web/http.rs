//! The HTTP/1.1 the built-in client and servers speak: a GET of one file of the set per request,
//! keep-alive until the client says `Connection: close`, a `200 OK` with `Content-Length`
//! (RFC 9112). Every request of the file set has one length (its URL has fixed-width fields),
//! so a server reads exactly one request per `recv`, and a client knows the exact length of the
//! response it expects, which it checks byte for byte.

use super::fileset::{FileId, CLASSES, FILES_PER_CLASS};

/// The request for `id`; `close` ends the connection after its response.
pub fn request(id: FileId, close: bool) -> Vec<u8> {
    // "Connection: close\r\nX:1\r\n" is as long as "Connection: keep-alive\r\n": both kinds
    // of request have REQUEST_LEN bytes.
    let connection = if close {
        "Connection: close\r\nX:1\r\n"
    } else {
        "Connection: keep-alive\r\n"
    };
    format!(
        "GET {} HTTP/1.1\r\nHost: 127.0.0.1\r\n{connection}\r\n",
        id.url()
    )
    .into_bytes()
}

/// The length of every request.
pub const REQUEST_LEN: usize = 85;

/// A request a server read: the file and whether the client closes after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// The file asked for.
    pub file: FileId,
    /// Whether the connection ends after the response.
    pub close: bool,
}

/// Parse a request of the built-in client; `None` if it is not one.
pub fn parse_request(data: &[u8]) -> Option<Request> {
    let text = std::str::from_utf8(data).ok()?;
    let rest = text.strip_prefix("GET /file_set/dir")?;
    let dir: u32 = rest.get(..5)?.parse().ok()?;
    let rest = rest.get(5..)?.strip_prefix("/class")?;
    let b = rest.as_bytes();
    if b.len() < 3 || b[1] != b'_' || !b[0].is_ascii_digit() || !b[2].is_ascii_digit() {
        return None;
    }
    let (class, file) = (b[0] - b'0', b[2] - b'0');
    if class as usize >= CLASSES || file as usize >= FILES_PER_CLASS {
        return None;
    }
    let file = FileId { dir, class, file };
    let close = if data == request(file, true).as_slice() {
        true
    } else if data == request(file, false).as_slice() {
        false
    } else {
        return None;
    };
    Some(Request { file, close })
}

/// The header of a `200 OK` response with a body of `len` bytes.
pub fn response_header(len: usize) -> String {
    format!("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {len}\r\n\r\n")
}

/// Where the body starts in `data`, if it holds the end of a response header (`\r\n\r\n`).
pub fn find_header_end(data: &[u8]) -> Option<usize> {
    data.windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| p + 4)
}

/// The `Content-Length` of a `200` response's header (a real server's: any other fields, in
/// any order and case); `None` if it is not a `200` with one length.
pub fn parse_response_head(head: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split("\r\n");
    let status = lines.next()?;
    if !(status.starts_with("HTTP/1.1 200 ") || status == "HTTP/1.1 200") {
        return None;
    }
    let mut length = None;
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                if length.is_some() {
                    return None;
                }
                length = Some(value.trim().parse().ok()?);
            } else if name.trim().eq_ignore_ascii_case("transfer-encoding") {
                return None;
            }
        }
    }
    length
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_have_one_length_and_parse_back() {
        for (dir, class, file, close) in [(0, 0, 0, false), (99_999, 3, 8, true), (7, 1, 4, true)] {
            let id = FileId { dir, class, file };
            let r = request(id, close);
            assert_eq!(r.len(), REQUEST_LEN, "{}", String::from_utf8_lossy(&r));
            assert_eq!(parse_request(&r), Some(Request { file: id, close }));
        }
        let mut bad = request(
            FileId {
                dir: 1,
                class: 1,
                file: 1,
            },
            false,
        );
        bad[20] = b'x';
        assert_eq!(parse_request(&bad), None);
        assert_eq!(parse_request(b"GET /file_set/dir00001/class4_1"), None);
        assert!(response_header(921_600).ends_with("Content-Length: 921600\r\n\r\n"));
    }

    #[test]
    fn real_servers_headers_are_read_for_their_length() {
        let nginx =
            b"HTTP/1.1 200 OK\r\nServer: nginx\r\ncontent-length: 5000\r\nETag: \"x\"\r\n\r\nbody";
        let end = find_header_end(nginx).unwrap();
        assert_eq!(&nginx[end..], b"body");
        assert_eq!(parse_response_head(&nginx[..end]), Some(5000));
        assert_eq!(parse_response_head(response_header(7).as_bytes()), Some(7));
        for bad in [
            "HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            "HTTP/1.1 200 OK\r\n\r\n",
        ] {
            assert_eq!(parse_response_head(bad.as_bytes()), None, "{bad}");
        }
        assert_eq!(find_header_end(b"HTTP/1.1 200 OK\r\n"), None);
    }
}
