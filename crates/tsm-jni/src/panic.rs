//! Panics never cross into the JVM. A process-wide hook (installed once per library copy)
//! records the message, location and a backtrace in a thread-local and logs it as an
//! `error` event (which reaches SLF4J, see `logging`); [`catch`] and the task wrapper in
//! `ops` turn the unwinding into an error message that Java throws as an exception.
//!
//! The shipped library is stripped of its DWARF line tables (build.sh keeps them in
//! `libtsm_jni.so.debug`; it keeps the symbol table): loaded in place, the backtrace has
//! function names (file:line too when the `.debug` file sits beside the library, found by
//! its `.gnu_debuglink`); an extracted copy is deleted once loaded, so std cannot read its
//! symbols at all. The message therefore also lists the raw frame addresses inside this
//! library, as offsets from its load base, with the library's GNU build-id:
//! `addr2line -Cfipe libtsm_jni.so.debug 0x...` (the `.debug` of that build-id) resolves them.

use std::any::Any;
use std::backtrace::Backtrace;
use std::cell::RefCell;
use std::sync::Once;

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Installs the panic hook (idempotent).
pub fn install_hook() {
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let msg = payload_text(info.payload());
            let location = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            let mut backtrace = Backtrace::force_capture().to_string();
            // An extracted copy is deleted once loaded: std cannot read its symbols back.
            if backtrace
                .lines()
                .all(|l| l.trim_end().ends_with("<unknown>"))
            {
                backtrace = "   (no symbols: see the native frames)\n".to_string();
            }
            let text = format!(
                "native panic: {msg}{location}\n{backtrace}{}",
                raw::frames()
            );
            tracing::error!(target: "tsm_jni::panic", "{text}");
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(text));
        }));
    });
}

fn payload_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-text panic payload)".to_string()
    }
}

/// The message for a caught panic: what the hook recorded on this thread (message,
/// location, backtrace), else the payload text.
pub fn describe(payload: Box<dyn Any + Send>) -> String {
    LAST_PANIC
        .with(|p| p.borrow_mut().take())
        .unwrap_or_else(|| format!("native panic: {}", payload_text(payload.as_ref())))
}

/// Runs `f`, turning a panic into `Err(message)`.
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install_hook();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(describe)
}

/// Raw return addresses of the current stack inside this library (Linux, 64-bit ELF).
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
mod raw {
    use std::ffi::{CStr, c_char, c_int, c_void};
    use std::fmt::Write;
    use std::sync::OnceLock;

    const MAX_FRAMES: usize = 128;
    const PT_LOAD: u32 = 1;
    const PT_NOTE: u32 = 4;
    const NT_GNU_BUILD_ID: u32 = 3;

    /// `struct dl_phdr_info` (glibc, musl): only the leading fields are read.
    #[repr(C)]
    struct DlPhdrInfo {
        addr: usize,
        name: *const c_char,
        phdr: *const Elf64Phdr,
        phnum: u16,
    }

    #[repr(C)]
    struct Elf64Phdr {
        p_type: u32,
        p_flags: u32,
        p_offset: u64,
        p_vaddr: u64,
        p_paddr: u64,
        p_filesz: u64,
        p_memsz: u64,
        p_align: u64,
    }

    unsafe extern "C" {
        fn dl_iterate_phdr(
            cb: extern "C" fn(*mut DlPhdrInfo, usize, *mut c_void) -> c_int,
            data: *mut c_void,
        ) -> c_int;
        fn _Unwind_Backtrace(
            cb: extern "C" fn(*mut c_void, *mut c_void) -> c_int,
            data: *mut c_void,
        ) -> c_int;
        fn _Unwind_GetIP(ctx: *mut c_void) -> usize;
    }

    /// This library in memory: load base, mapped ranges, build-id (hex), path.
    struct Image {
        base: usize,
        ranges: Vec<(usize, usize)>,
        build_id: String,
        path: String,
    }

    impl Image {
        fn contains(&self, a: usize) -> bool {
            self.ranges.iter().any(|&(s, e)| a >= s && a < e)
        }
    }

    struct Search {
        probe: usize,
        found: Option<Image>,
    }

    extern "C" fn visit(info: *mut DlPhdrInfo, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: the loader passes a valid dl_phdr_info whose program headers and
        // PT_NOTE segments are mapped; `data` is the `Search` given to dl_iterate_phdr.
        unsafe {
            let info = &*info;
            let search = &mut *(data as *mut Search);
            let phdrs = std::slice::from_raw_parts(info.phdr, info.phnum as usize);
            let ranges: Vec<(usize, usize)> = phdrs
                .iter()
                .filter(|p| p.p_type == PT_LOAD)
                .map(|p| {
                    let start = info.addr + p.p_vaddr as usize;
                    (start, start + p.p_memsz as usize)
                })
                .collect();
            if !ranges
                .iter()
                .any(|&(s, e)| search.probe >= s && search.probe < e)
            {
                return 0;
            }
            let mut build_id = String::new();
            for p in phdrs.iter().filter(|p| p.p_type == PT_NOTE) {
                let mut at = (info.addr + p.p_vaddr as usize) as *const u8;
                let end = at.add(p.p_memsz as usize);
                while build_id.is_empty() && at.add(12) <= end {
                    let word = |i: usize| (at.add(4 * i) as *const u32).read_unaligned();
                    let (namesz, descsz, kind) = (word(0) as usize, word(1) as usize, word(2));
                    let name = at.add(12);
                    let desc = name.add((namesz + 3) & !3);
                    if desc.add(descsz) > end {
                        break;
                    }
                    if kind == NT_GNU_BUILD_ID
                        && std::slice::from_raw_parts(name, namesz) == b"GNU\0"
                    {
                        for b in std::slice::from_raw_parts(desc, descsz) {
                            let _ = write!(build_id, "{b:02x}");
                        }
                    }
                    at = desc.add((descsz + 3) & !3);
                }
            }
            let path = if info.name.is_null() {
                String::new()
            } else {
                CStr::from_ptr(info.name).to_string_lossy().into_owned()
            };
            search.found = Some(Image {
                base: info.addr,
                ranges,
                build_id,
                path,
            });
            1
        }
    }

    fn image() -> Option<&'static Image> {
        static IMAGE: OnceLock<Option<Image>> = OnceLock::new();
        IMAGE
            .get_or_init(|| {
                let mut search = Search {
                    probe: frames as fn() -> String as *const () as usize,
                    found: None,
                };
                // SAFETY: `visit` matches dl_iterate_phdr's callback; `search` outlives the call.
                unsafe { dl_iterate_phdr(visit, &mut search as *mut Search as *mut c_void) };
                search.found
            })
            .as_ref()
    }

    extern "C" fn push_ip(ctx: *mut c_void, data: *mut c_void) -> c_int {
        // SAFETY: `data` is the Vec given to _Unwind_Backtrace; `ctx` is the unwinder's.
        let ips = unsafe { &mut *(data as *mut Vec<usize>) };
        ips.push(unsafe { _Unwind_GetIP(ctx) });
        if ips.len() >= MAX_FRAMES { 5 } else { 0 } // _URC_END_OF_STACK stops, _URC_NO_REASON goes on
    }

    /// One line: build-id, load base, path and the frames inside this library as offsets
    /// (return address - 1, i.e. inside the call instruction) that addr2line resolves.
    pub(super) fn frames() -> String {
        let Some(img) = image() else {
            return String::new();
        };
        let mut ips: Vec<usize> = Vec::with_capacity(MAX_FRAMES);
        // SAFETY: `push_ip` matches the callback type; `ips` outlives the call.
        unsafe { _Unwind_Backtrace(push_ip, &mut ips as *mut Vec<usize> as *mut c_void) };
        let mut offsets = String::new();
        for ip in ips
            .into_iter()
            .filter(|&ip| ip != 0 && img.contains(ip - 1))
        {
            let _ = write!(offsets, " {:#x}", ip - 1 - img.base);
        }
        let build_id = if img.build_id.is_empty() {
            "none"
        } else {
            &img.build_id
        };
        format!(
            "native frames (libtsm_jni build-id {build_id}, load base {:#x}, {}; resolve with \
             `addr2line -Cfipe libtsm_jni.so.debug ADDR...`):{offsets}\n",
            img.base, img.path
        )
    }
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
mod raw {
    pub fn frames() -> String {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_become_messages_with_location() {
        let r: Result<(), String> = catch(|| panic!("boom 42"));
        let msg = r.expect_err("panicked");
        assert!(msg.contains("boom 42"), "{msg}");
        assert!(msg.contains("panic.rs"), "{msg}");
        #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
        {
            let line = msg
                .lines()
                .find(|l| l.starts_with("native frames"))
                .expect(&msg);
            assert!(line.contains("build-id "), "{line}");
            assert!(line.contains(" 0x"), "{line}");
        }
        assert_eq!(catch(|| 5), Ok(5));
    }
}
