//! The pieces of the `web` workload that are not a task body: SPECweb99's file set
//! ([`fileset`]) and its request mix ([`mix`]), the HTTP the built-in client and servers speak
//! ([`http`]), and the file set as seed 003's dcache ([`dentries`]). docs/web.md says what is followed and what not;
//! the sources are the SPECweb99 whitepaper (§4.5, §5, §6) and run rules (§2.2).

pub mod dentries;
pub mod fileset;
pub mod http;
pub mod mix;
pub mod servers;

pub use fileset::{FileId, FileSet, FileSetError, CLASSES, FILES_PER_CLASS};
pub use mix::RequestMix;
pub use servers::RealServer;
