use std::sync::Arc;

use super::*;

fn caller(name: &str) -> Caller {
    Caller(Arc::from(name))
}

fn ids(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("s{i}")).collect()
}

#[test]
fn the_default_share_is_an_equal_part_of_the_cap_and_at_least_one() {
    assert_eq!(Sessions::new(64, None, 1).share(), 64);
    assert_eq!(Sessions::new(64, None, 2).share(), 32);
    assert_eq!(Sessions::new(64, None, 3).share(), 21);
    assert_eq!(Sessions::new(4, None, 9).share(), 1);
    assert_eq!(Sessions::new(4, Some(3), 2).share(), 3);
    assert_eq!(Sessions::new(4, Some(10), 2).share(), 4);
    assert_eq!(Sessions::new(4, Some(0), 2).share(), 1);
}

#[test]
fn one_caller_fills_its_share_and_the_other_still_gets_in() {
    let sessions = Sessions::new(4, None, 2);
    let (alice, bob) = (caller("alice"), caller("bob"));
    let live = ids(3);
    sessions
        .open(&bob, &[])
        .ok()
        .unwrap()
        .opened(live[0].clone());
    sessions
        .open(&bob, &live[..1])
        .ok()
        .unwrap()
        .opened(live[1].clone());
    match sessions.open(&bob, &live[..2]) {
        Err(NoRoom::Share { caller, held }) => assert_eq!((&*caller.0, held), ("bob", 2)),
        _ => panic!("bob went past his share"),
    }
    sessions
        .open(&alice, &live[..2])
        .ok()
        .unwrap()
        .opened(live[2].clone());
    // A session that ended (not live any more) is forgotten, and its place is free again.
    assert!(sessions.open(&bob, &live[1..]).is_ok());
    assert_eq!(sessions.owner("s0"), None);
    assert_eq!(sessions.owner("s2"), Some(alice));
}

#[test]
fn an_initialize_on_its_way_holds_its_place_until_it_is_answered() {
    let sessions = Sessions::new(2, None, 1);
    let me = caller("caller1");
    let first = sessions.open(&me, &[]).ok().unwrap();
    let second = sessions.open(&me, &[]).ok().unwrap();
    assert!(matches!(
        sessions.open(&me, &[]),
        Err(NoRoom::All { live: 2 })
    ));
    // One failed (no session made): its place is given back.
    drop(second);
    first.opened("s0".to_owned());
    assert!(sessions.open(&me, &ids(1)).is_ok());
}

/// Two requests bringing one kept session back at once hold one place between them: with a
/// share of one, the second is not refused (review 37 #7).
#[test]
fn two_requests_bringing_one_session_back_hold_one_place() {
    let sessions = Sessions::new(2, None, 2);
    let alice = caller("alice");
    let first = sessions.resume(&alice, &[], "kept-1").ok().flatten();
    assert!(first.is_some(), "the first takes a place");
    let second = sessions.resume(&alice, &[], "kept-1");
    assert!(matches!(second, Ok(None)), "the second takes none");
    assert!(
        sessions.resume(&alice, &[], "kept-2").is_err(),
        "another of hers is past her share"
    );
    first.unwrap().opened("kept-1".to_owned());
    let live = ["kept-1".to_owned()];
    assert!(
        sessions.open(&alice, &live).is_err(),
        "the session brought back counts"
    );
    assert!(sessions.open(&caller("bob"), &live).is_ok());
}
