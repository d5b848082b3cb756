//! The example serves, answers itself over A2A, and stops.

#[test]
fn the_example_serves_its_skill_over_a2a() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_example-served-skill"))
        .arg("make this loud")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        ["Completed: MAKE THIS LOUD"]
    );
}
