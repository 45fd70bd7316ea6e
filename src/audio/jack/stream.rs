//! A JACK client stream (the `jack` crate's default features are kept: with
//! `dynamic_loading` off, `cycle_times()` always errs). The process thread is JACK's
//! (FIFO at the server's priority − 5); xrun notifications arrive on JACK's non-RT
//! notification thread with `jack_get_xrun_delayed_usecs`, and are correlated to
//! cycles by time afterwards. A server that dies sets `Notes::server_gone`.

use super::probe::{identity, library, select_server, server_name};
use super::server::Implementation;
use crate::audio::stream::cpus_or_all;
use crate::audio::{
    Cycle, Notes, PeriodJournal, Process, Stream, StreamInfo, StreamSpec, XrunNote,
};
use crate::sys::now_ns;
use jack::{AudioIn, AudioOut, Client, ClientOptions, ClientStatus, Control, Port, ProcessScope};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Client name on the JACK graph.
pub const CLIENT_NAME: &str = "xrunrig-livefx";

/// The notification side every JACK client of ours shares (the livefx stream and
/// `watch`'s passive client): xruns and server death into `Notes`.
pub(crate) struct Notif {
    pub notes: Arc<Notes>,
}

impl jack::NotificationHandler for Notif {
    unsafe fn shutdown(&mut self, _status: ClientStatus, _reason: &str) {
        // Signal-handler rules: atomics only.
        self.notes.gone();
    }
    fn xrun(&mut self, c: &Client) -> Control {
        // SAFETY: the client pointer is valid for the callback's duration.
        let delayed_us = unsafe { jack::jack_sys::jack_get_xrun_delayed_usecs(c.raw()) };
        self.notes.xrun(XrunNote {
            t_ns: now_ns(),
            delayed_us,
        });
        Control::Continue
    }
}

struct Proc {
    inner: Box<dyn Process>,
    input: Port<AudioIn>,
    output: Port<AudioOut>,
    offset_ns: i64,
    index: u64,
    cpus: Vec<usize>,
    started: bool,
    /// Zeros, for a period whose input cannot be read; sized before activation.
    silence: Vec<f32>,
    /// Set by stop: play silence and record no more cycles, so deactivation (which
    /// disconnects the ports) clicks in no recorded cycle, and the card's playback
    /// ring holds zeros rather than this trial's signal when the next one starts.
    ending: Arc<AtomicBool>,
}

pub(crate) fn to_mono(usecs: u64, offset_ns: i64) -> u64 {
    (usecs as i64 * 1000 + offset_ns).max(0) as u64
}

impl jack::ProcessHandler for Proc {
    fn process(&mut self, _: &Client, ps: &ProcessScope) -> Control {
        let wake = now_ns();
        if !self.started {
            self.started = true;
            // JACK's thread inherited the control thread's pin; place it as asked.
            let _ = crate::engine::thread::set_affinity(0, &self.cpus);
            self.inner.rt_init();
        }
        let frames = ps.n_frames();
        let (start, deadline) = match ps.cycle_times() {
            Ok(t) => (
                to_mono(t.current_usecs, self.offset_ns),
                to_mono(t.next_usecs, self.offset_ns),
            ),
            // Without cycle times, estimate from the period (should not happen with
            // dynamic_loading; counted as lateness 0).
            Err(_) => (wake, wake + frames as u64 * 1_000_000_000 / 48_000),
        };
        let input = self.input.as_slice(ps);
        let input: &[f32] = if input.len() == frames as usize {
            input
        } else {
            &self.silence[..(frames as usize).min(self.silence.len())]
        };
        let output = self.output.as_mut_slice(ps);
        output.iter_mut().for_each(|x| *x = 0.0);
        if self.ending.load(Ordering::Relaxed) {
            return Control::Continue;
        }
        let mut c = Cycle {
            index: self.index,
            frames,
            start_ns: start,
            deadline_ns: deadline,
            wake_ns: wake,
            xruns_before: 0,
            input,
            output,
        };
        self.index += 1;
        if self.inner.cycle(&mut c) {
            Control::Continue
        } else {
            Control::Quit
        }
    }
}

struct JackStream {
    client: Option<jack::AsyncClient<Notif, Proc>>,
    info: StreamInfo,
    /// The server's period, when we changed it: put back on stop.
    changed: Option<ChangedPeriod>,
    ending: Arc<AtomicBool>,
}

/// A server period we changed: what it was, and the journal that wrote it down first
/// (so a run killed outright is put back by the next start).
struct ChangedPeriod {
    server: String,
    was: u32,
    journal: PeriodJournal,
}

/// A changed period put back when `open` fails after changing it.
struct PeriodBack(Option<ChangedPeriod>);

impl Drop for PeriodBack {
    fn drop(&mut self) {
        if let Some(c) = &self.0 {
            match super::period::set_server_period(&c.server, c.was) {
                Ok(()) => {
                    if let Err(e) = c.journal.0.forget(&c.server) {
                        eprintln!("xrunrig: {e}");
                    }
                }
                Err(e) => eprintln!(
                    "xrunrig: JACK: cannot put server '{}' back to period {}: {e} (journaled: the next start tries again)",
                    c.server, c.was
                ),
            }
        }
    }
}

impl Stream for JackStream {
    fn info(&self) -> &StreamInfo {
        &self.info
    }
    fn stop(mut self: Box<Self>) -> Result<(), String> {
        let Some(c) = self.client.take() else {
            return Ok(());
        };
        // Silence for a full buffer and then some before the ports go away.
        self.ending.store(true, Ordering::SeqCst);
        let period_ns = self.info.period as u64 * 1_000_000_000 / self.info.rate.max(1) as u64;
        std::thread::sleep(std::time::Duration::from_nanos(
            (4 * period_ns).max(20_000_000),
        ));
        match c.deactivate() {
            Ok((client, _, mut p)) => {
                p.inner.end();
                if let Some(c) = &self.changed {
                    let was = c.was;
                    client.set_buffer_size(was).map_err(|e| {
                        format!("JACK: cannot put the server's period back to {was}: {e} (journaled: the next start tries again)")
                    })?;
                    c.journal.0.forget(&c.server)?;
                }
                Ok(())
            }
            Err(e) => Err(format!("JACK deactivate: {e}")),
        }
    }
}

/// CLOCK_MONOTONIC minus JACK's time base, from the tightest of a few paired readings.
pub(crate) fn clock_offset(c: &Client) -> i64 {
    (0..16)
        .map(|_| {
            let a = now_ns();
            let j = c.time();
            let b = now_ns();
            (b - a, (a / 2 + b / 2) as i64 - j as i64 * 1000)
        })
        .min_by_key(|(w, _)| *w)
        .map_or(0, |(_, o)| o)
}

pub(super) fn open(
    spec: &StreamSpec,
    process: Box<dyn Process>,
    notes: Arc<Notes>,
) -> Result<Box<dyn Stream>, String> {
    select_server(&spec.device);
    library()?;
    let (client, _) = Client::new(CLIENT_NAME, ClientOptions::NO_START_SERVER).map_err(|e| {
        format!(
            "cannot connect to JACK server '{}': {e}. Start one (e.g. `jackd -R -d alsa` or \
             `jackd -n NAME -R -d dummy -r 48000 -p 256` and pass --device NAME), or use --backend clock",
            server_name(&spec.device)
        )
    })?;
    let server = server_name(&spec.device);
    let who = identity();
    let mut note = format!(
        "JACK server '{server}'{}",
        who.as_ref()
            .map_or(String::new(), |i| format!(" ({})", i.describe()))
    );
    // Until the stream is built, an error return puts the period back (as a new client).
    let mut back = PeriodBack(None);
    if spec.period_explicit && client.buffer_size() != spec.period {
        let was = client.buffer_size();
        // Journaled before it is changed, so a run killed outright is put back by the
        // next start; with nowhere to journal it, it is not changed.
        let Some(journal) = &spec.journal else {
            return Err(format!(
                "JACK: the server runs at period {was}, not {}: this caller keeps no journal to put it back, so it was not changed",
                spec.period
            ));
        };
        journal.0.journal(&server, was).map_err(|e| {
            format!("JACK: the server's period ({was}) could not be journaled, so it was not changed: {e}")
        })?;
        back.0 = Some(ChangedPeriod {
            server: server.clone(),
            was,
            journal: journal.clone(),
        });
        client
            .set_buffer_size(spec.period)
            .map_err(|e| format!("JACK: cannot set the period to {}: {e}", spec.period))?;
        note.push_str(&format!(
            "; the server's period changed from {was} to {} for the trial",
            spec.period
        ));
    }
    let rate = client.sample_rate();
    if rate != spec.rate {
        note.push_str(&format!(
            "; the server runs at {rate} Hz (asked {} Hz: JACK's rate is the server's)",
            spec.rate
        ));
    }
    let input = client
        .register_port("in", AudioIn::default())
        .map_err(|e| format!("JACK: cannot register port 'in': {e}"))?;
    let output = client
        .register_port("out", AudioOut::default())
        .map_err(|e| format!("JACK: cannot register port 'out': {e}"))?;
    let in_name = input.name().unwrap_or_default();
    let out_name = output.name().unwrap_or_default();
    let offset_ns = clock_offset(&client);
    let cpus = cpus_or_all(spec);
    let ending = Arc::new(AtomicBool::new(false));
    let proc_ = Proc {
        inner: process,
        input,
        output,
        offset_ns,
        index: 0,
        cpus,
        started: false,
        silence: vec![0.0; 8192],
        ending: ending.clone(),
    };
    let active = client
        .activate_async(
            Notif {
                notes: notes.clone(),
            },
            proc_,
        )
        .map_err(|e| format!("JACK: cannot activate the client: {e}"))?;
    // PipeWire's libjack applies a new period asynchronously: it sets the node's
    // node.force-quantum, and the graph changes quantum once the client runs. Wait
    // (bounded) for it, or the period recorded would be the old one while the cycles
    // run at the new. jackd2 has changed it before set_buffer_size returned.
    let mut period = active.as_client().buffer_size();
    if back.0.is_some() {
        let t0 = std::time::Instant::now();
        while period != spec.period && t0.elapsed() < std::time::Duration::from_secs(2) {
            std::thread::sleep(std::time::Duration::from_millis(10));
            period = active.as_client().buffer_size();
        }
        if period != spec.period {
            note.push_str(&format!(
                "; the server runs at period {period} although {} was set (something forces it)",
                spec.period
            ));
        }
    }
    if let Some(lb) = &spec.loopback {
        let c = active.as_client();
        if let Some(p) = &lb.playback {
            c.connect_ports_by_name(&out_name, p)
                .map_err(|e| format!("JACK loopback: cannot connect {out_name} -> {p}: {e}"))?;
        }
        if let Some(p) = &lb.capture {
            c.connect_ports_by_name(p, &in_name)
                .map_err(|e| format!("JACK loopback: cannot connect {p} -> {in_name}: {e}"))?;
        }
        note.push_str(&format!(
            "; loopback {} -> {} ... {} -> {}",
            out_name,
            lb.playback.as_deref().unwrap_or("(unconnected)"),
            lb.capture.as_deref().unwrap_or("(unconnected)"),
            in_name
        ));
    }
    note.push_str(&format!("; JACK time + {offset_ns} ns = CLOCK_MONOTONIC"));
    let xruns = match who.as_ref().map(|i| i.implementation) {
        // pipewire-jack calls the xrun callback when the DRIVER's xrun count moves (a
        // card's under/overrun), and never for the first one it sees; a client that
        // overruns its cycle is logged by the server ("client too slow!") but not
        // reported to it. Deadline misses still count every overrun.
        Some(Implementation::PipeWire) => {
            note.push_str(
                "; PipeWire reports driver xruns only (not a client's overrun, not the first one): misses count those",
            );
            "PipeWire's xrun callback: driver (card) xruns after the first; a client's own overrun is not reported, deadline misses count it"
        }
        _ => "JACK's xrun notifications (jack_set_xrun_callback), tied to cycles by time",
    };
    let server_info = results::livefx::AudioServer {
        kind: who
            .as_ref()
            .map_or("jack", |i| i.implementation.name())
            .into(),
        version: who.as_ref().map(|i| i.version.clone()),
        library: who.as_ref().and_then(|i| i.library.clone()),
        period: Some(period),
        rate: Some(rate),
        xruns: Some(xruns.into()),
        // Read from the server's own command line: a dummy driver paces the graph
        // with a timer, so no sound card took part.
        driver: super::server::running_driver(&server),
        ..Default::default()
    };
    // Built: the stream puts the period back on stop from here on.
    let changed = back.0.take();
    Ok(Box::new(JackStream {
        client: Some(active),
        info: StreamInfo {
            backend: "jack",
            rate,
            period,
            note,
            clock_offset_ns: offset_ns,
            server: Some(server_info),
        },
        changed,
        ending,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usecs_convert_with_offset() {
        assert_eq!(to_mono(1000, 0), 1_000_000);
        assert_eq!(to_mono(1000, -500), 999_500);
        assert_eq!(to_mono(0, -5), 0);
    }
}
