//! Issue 13: every count of every preset is bounded by what a run can do, before anything
//! runs; no product of counts wraps; the message names the parameter and the accepted range.

use schedlab_workload::presets::{Chat, Interbench, Messaging, PingPong, Preset, Yield};

/// Set `params` on the preset's defaults and check the whole; the first error, as text.
fn refusal<P: Preset>(params: &[(&str, &str)]) -> Option<String> {
    let mut p = P::with_defaults(4);
    for (name, value) in params {
        if let Err(e) = p.set_param(name, value) {
            return Some(e.to_string());
        }
    }
    p.check().err().map(|e| e.to_string())
}

#[test]
fn huge_or_negative_counts_are_refused_with_the_range() {
    let cases: Vec<(Option<String>, &[&str])> = vec![
        // The receivers' expected count (fds × loops) wrapped and the run "deadlocked".
        (
            refusal::<Messaging>(&[
                ("groups", "1"),
                ("fds", "4"),
                ("loops", "4611686018427387905"),
            ]),
            &["loops", "1..1000000000"],
        ),
        (
            refusal::<Messaging>(&[("loops", "18446744073709551615")]),
            &["loops", "1..1000000000"],
        ),
        (
            refusal::<Messaging>(&[("loops", "99999999999999999999999")]),
            &["loops", "1..1000000000"],
        ),
        (
            refusal::<Messaging>(&[("loops", "-1")]),
            &["loops", "'-1'", "1..1000000000"],
        ),
        (
            refusal::<Messaging>(&[("groups", "0")]),
            &["groups", "1..65536"],
        ),
        (
            refusal::<Messaging>(&[("groups", "1000"), ("fds", "1000")]),
            &["groups and fds", "2000000 tasks", "131072"],
        ),
        (
            refusal::<Messaging>(&[("groups", "10"), ("fds", "100"), ("loops", "1000000000")]),
            &["messages", "100000000000", "10000000000"],
        ),
        (
            refusal::<PingPong>(&[("loops", "18446744073709551615")]),
            &["loops", "1..1000000000"],
        ),
        (
            refusal::<PingPong>(&[("loops", "-5")]),
            &["loops", "1..1000000000"],
        ),
        (
            refusal::<Chat>(&[("rooms", "99999999999999")]),
            &["rooms", "1..21845"],
        ),
        (refusal::<Chat>(&[("users", "-1")]), &["users", "2..1000"]),
        (
            refusal::<Chat>(&[("messages", "18446744073709551615")]),
            &["messages", "1..1000000000"],
        ),
        (
            refusal::<Chat>(&[("rooms", "10000"), ("users", "1000")]),
            &["rooms and users", "tasks", "131072"],
        ),
        (
            refusal::<Chat>(&[("rooms", "10"), ("users", "1000"), ("messages", "1000000")]),
            &["messages", "10000000000"],
        ),
        (
            refusal::<Yield>(&[("threads", "-1")]),
            &["threads", "1..131072"],
        ),
        (
            refusal::<Yield>(&[("threads", "99999999999999999999")]),
            &["threads", "1..131072"],
        ),
        (
            refusal::<Interbench>(&[("load-threads", "-3")]),
            &["load-threads", "1..1024"],
        ),
    ];
    for (i, (got, words)) in cases.iter().enumerate() {
        let text = got
            .as_deref()
            .unwrap_or_else(|| panic!("case {i} was accepted"));
        for w in *words {
            assert!(text.contains(w), "case {i}: '{w}' not in: {text}");
        }
    }
}

#[test]
fn counts_within_bounds_are_accepted() {
    assert_eq!(
        refusal::<Messaging>(&[("groups", "1"), ("fds", "4"), ("loops", "1000000")]),
        None
    );
    assert_eq!(
        refusal::<Messaging>(&[("groups", "40"), ("fds", "20")]),
        None
    );
    assert_eq!(refusal::<PingPong>(&[("loops", "1000000000")]), None);
    assert_eq!(refusal::<Chat>(&[("rooms", "30"), ("messages", "2")]), None);
    assert_eq!(refusal::<Yield>(&[("threads", "131072")]), None);
}

/// A member's connection carries every other member's messages: the volume the real backend
/// weighs against a TCP send buffer before it lets the relay's writers go without a lock.
#[test]
fn chat_channel_volume_is_every_other_members_messages() {
    use schedlab_workload::{ChannelVolume, Workload};
    let mut chat = Chat::with_defaults(4);
    for (name, value) in [("users", "20"), ("messages", "50"), ("size", "116")] {
        chat.set_param(name, value).unwrap();
    }
    assert_eq!(
        chat.channel_volume(),
        Some(ChannelVolume {
            messages: 19 * 50,
            bytes: 19 * 50 * 116,
        })
    );
}
