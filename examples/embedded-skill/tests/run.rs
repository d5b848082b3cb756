//! The example runs, and prints what its skill reported, in order.

#[test]
fn the_example_reports_each_word_and_completes() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_example-embedded-skill"))
        .arg("one two three")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    let notes: Vec<&str> = stdout.lines().collect();
    let words = notes
        .iter()
        .position(|l| l.contains("word 1: one"))
        .unwrap();
    assert!(notes[words + 1].contains("word 2: two"), "{stdout}");
    assert!(notes[words + 2].contains("word 3: three"), "{stdout}");
    assert!(stdout.trim_end().ends_with("3 words"), "{stdout}");
}
