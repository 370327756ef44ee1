//! The `--report` HTML as a browser draws it: headless Chromium screenshots a report and the
//! PNG must show the plots (many colours, the CPU and memory bars' exact colours). Runs only
//! where Chromium is installed (`chromium`, `chromium-browser`, or the path in
//! `KSCHED_CHROMIUM`); elsewhere it prints a note and passes. CI does not install Chromium.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The series colours of the utilization histogram (report.rs `COLORS[0]`, `COLORS[1]`).
const CPU_BAR: [u8; 3] = [0x1f, 0x77, 0xb4];
const MEMORY_BAR: [u8; 3] = [0xd6, 0x27, 0x28];

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KSCHED_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n))).find(|p| p.is_file())
}

/// Headless flags that work as root on a machine without a network (see
/// `/work/.library/env/machines/rust.md`): no sandbox, no GPU, no background connections.
fn screenshot(browser: &Path, html: &Path, png: &Path, profile: &Path) {
    let status = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1400,1200",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", html.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("chromium runs");
    // Headless chromium exits once the screenshot is written.
    assert!(status.success(), "chromium exited with {status}");
}

/// Pixels by colour (RGB; alpha dropped).
fn colours(png_path: &Path) -> (u64, HashMap<[u8; 3], u64>) {
    let file = std::fs::File::open(png_path).expect("screenshot exists");
    let mut reader = png::Decoder::new(std::io::BufReader::new(file)).read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("PNG size fits in memory")];
    let info = reader.next_frame(&mut buf).expect("a PNG frame");
    assert_eq!(info.bit_depth, png::BitDepth::Eight, "unexpected PNG bit depth");
    let step = info.color_type.samples();
    assert!(step >= 3, "unexpected PNG colour type {:?}", info.color_type);
    let mut counts: HashMap<[u8; 3], u64> = HashMap::new();
    for px in buf[..info.buffer_size()].chunks_exact(step) {
        *counts.entry([px[0], px[1], px[2]]).or_default() += 1;
    }
    (u64::from(info.width) * u64::from(info.height), counts)
}

#[test]
fn report_screenshot_shows_the_plots() {
    let Some(browser) = chromium() else {
        println!("note: chromium not found (set KSCHED_CHROMIUM to its path): report screenshot check skipped");
        return;
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report_render");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("profile")).unwrap();
    let html = dir.join("report.html");
    let out = Command::new(env!("CARGO_BIN_EXE_ksched"))
        .args(["--nodes", "200", "--pods", "400", "--warmup-pods", "50", "--report"])
        .arg(&html)
        .output()
        .expect("ksched runs");
    assert!(out.status.success(), "ksched failed: {}", String::from_utf8_lossy(&out.stderr));

    let png = dir.join("report.png");
    screenshot(&browser, &html, &png, &dir.join("profile"));
    let bytes = std::fs::metadata(&png).expect("screenshot written").len();
    assert!(bytes > 20_000, "screenshot is only {bytes} bytes: a blank page?");

    let (pixels, counts) = colours(&png);
    let most = counts.values().copied().max().unwrap_or(0);
    assert!(counts.len() > 20, "only {} colours in the screenshot", counts.len());
    assert!(most < pixels * 98 / 100, "one colour covers {most} of {pixels} pixels");
    for (what, c) in [("CPU bars", CPU_BAR), ("memory bars", MEMORY_BAR)] {
        let n = counts.get(&c).copied().unwrap_or(0);
        assert!(n > 100, "{what} ({c:02x?}) cover only {n} pixels: the utilization plot is not drawn");
    }
}

/// `ksched replay --html`: the timeline's plots drawn (issue 46). A small Alibaba-schema trace
/// whose GPU pods queue for the GPUs, so every plot has data.
#[test]
fn replay_timeline_screenshot_shows_the_plots() {
    let Some(browser) = chromium() else {
        println!("note: chromium not found (set KSCHED_CHROMIUM to its path): replay screenshot check skipped");
        return;
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("replay_render");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("profile")).unwrap();
    let nodes = dir.join("nodes.csv");
    let pods = dir.join("pods.csv");
    let mut n = String::from("sn,cpu_milli,memory_mib,gpu,model\n");
    for i in 0..8 {
        n.push_str(&format!("g{i},32000,131072,{},{}\n", 1 + i % 4, ["V100", "T4"][i % 2]));
    }
    let mut p = String::from(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n",
    );
    for i in 0..120 {
        let (t, gpus) = (i * 30, 1 + i % 3);
        p.push_str(&format!(
            "p{i},{},4096,{gpus},1000,{},LS,Running,{t},{},\n",
            2000 + 1000 * (i % 5),
            ["", "T4", "V100|T4"][i % 3],
            t + 600 + 60 * (i % 7)
        ));
    }
    std::fs::write(&nodes, n).unwrap();
    std::fs::write(&pods, p).unwrap();
    let html = dir.join("timeline.html");
    let out = Command::new(env!("CARGO_BIN_EXE_ksched"))
        .args(["replay", "--from", "alibaba"])
        .arg(&nodes)
        .arg(&pods)
        .arg("--html")
        .arg(&html)
        .output()
        .expect("ksched runs");
    assert!(out.status.success(), "ksched failed: {}", String::from_utf8_lossy(&out.stderr));
    let png = dir.join("timeline.png");
    screenshot(&browser, &html, &png, &dir.join("profile"));
    let (pixels, counts) = colours(&png);
    let most = counts.values().copied().max().unwrap_or(0);
    assert!(counts.len() > 20, "only {} colours in the screenshot", counts.len());
    assert!(most < pixels * 98 / 100, "one colour covers {most} of {pixels} pixels");
    for (what, c) in [("first series", CPU_BAR), ("second series", MEMORY_BAR)] {
        let n = counts.get(&c).copied().unwrap_or(0);
        assert!(n > 200, "{what} ({c:02x?}) covers only {n} pixels: the lines are not drawn");
    }
}
