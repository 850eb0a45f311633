//! No `.npz`, however broken, makes deploygen panic: random bytes, every
//! truncation of a real file, random byte flips, and random `.npy` headers
//! all end in `Ok` or a clear `Error::Npz`; data that parses binds or fails
//! with an error, never a panic.

use std::path::Path;
use std::sync::OnceLock;

use deploygen::bind::{self, npz, BindOptions};
use deploygen::ir::Model;
use deploygen::Error;
use proptest::prelude::*;

fn fixture_dir() -> &'static Path {
    static P: OnceLock<std::path::PathBuf> = OnceLock::new();
    P.get_or_init(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny_classifier"))
}

fn real_npz() -> &'static [u8] {
    static B: OnceLock<Vec<u8>> = OnceLock::new();
    B.get_or_init(|| std::fs::read(fixture_dir().join("inputs.npz")).unwrap())
}

/// A deflated npz (np.savez_compressed-style members).
fn compressed_npz() -> &'static [u8] {
    static B: OnceLock<Vec<u8>> = OnceLock::new();
    B.get_or_init(|| std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("models/kws_cnn/inputs.npz")).unwrap())
}

fn model() -> &'static Model {
    static M: OnceLock<Model> = OnceLock::new();
    M.get_or_init(|| deploygen::load(fixture_dir()).unwrap())
}

/// Parse, and when that works, bind to the tiny classifier and read
/// every member.
fn parse_and_bind(bytes: &[u8]) {
    match npz::parse(Path::new("fuzz.npz"), bytes) {
        Ok(data) => {
            let _ = bind::bind_data(model(), &data, None, &BindOptions::default());
            if let Err(e) = data.arrays() {
                assert!(matches!(e, Error::Npz { .. }), "{e:?}");
            }
        }
        Err(e) => assert!(matches!(e, Error::Npz { .. }), "{e:?}"),
    }
}

#[test]
fn every_truncation_of_a_real_npz_is_an_error() {
    for src in [real_npz(), compressed_npz()] {
        for cut in 0..src.len() {
            let r = npz::parse(Path::new("cut.npz"), &src[..cut]);
            assert!(r.is_err(), "a {cut}-byte prefix of a {}-byte npz parsed", src.len());
        }
        assert!(npz::parse(Path::new("whole.npz"), src).is_ok());
    }
}

/// One `.npy` member of the real npz, as bytes.
fn real_npy() -> &'static [u8] {
    static B: OnceLock<Vec<u8>> = OnceLock::new();
    B.get_or_init(|| {
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(real_npz())).unwrap();
        let mut member = zip.by_name("arr_0002.npy").unwrap();
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut member, &mut v).unwrap();
        v
    })
}

/// An npz whose one member holds `npy` verbatim, with a correct CRC: the
/// zip layer accepts it, so the bytes reach the `.npy` parser.
fn wrap(npy: &[u8], deflate: bool) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let method = if deflate { zip::CompressionMethod::Deflated } else { zip::CompressionMethod::Stored };
    zip.start_file("arr_0002.npy", zip::write::SimpleFileOptions::default().compression_method(method)).unwrap();
    std::io::Write::write_all(&mut zip, npy).unwrap();
    zip.finish().unwrap().into_inner()
}

#[test]
fn every_truncation_of_a_real_npy_member_is_an_error() {
    let npy = real_npy();
    for cut in 0..npy.len() {
        assert!(npz::parse_npy(&npy[..cut]).is_err(), "a {cut}-byte prefix parsed");
        assert!(npz::parse(Path::new("cut.npz"), &wrap(&npy[..cut], cut % 2 == 0)).is_err());
    }
    assert!(npz::parse(Path::new("whole.npz"), &wrap(npy, true)).is_ok());
}

fn mb_index() -> impl Strategy<Value = usize> + Clone {
    prop_oneof![0usize..12, Just(usize::MAX), Just(99_999_999_999usize)]
}

/// Keys of every shape the layouts know, with extreme indices.
fn key() -> impl Strategy<Value = String> {
    let n = mb_index();
    let name = prop::sample::select(vec!["input", "labels", "fc1.weight", "lazy_reset_grad", "x", "meta"]);
    prop_oneof![
        n.clone().prop_map(|i| format!("arr_{i:04}")),
        (n.clone(), n.clone()).prop_map(|(m, i)| format!("mb{m}_arr_{i:04}")),
        (n.clone(), name.clone()).prop_map(|(m, s)| format!("mb{m}_{s}")),
        name.prop_map(str::to_string),
        prop::sample::select(vec!["data_size", "n_batches", "n_accum", "learning_rate", "other"])
            .prop_map(|m| format!("meta_{m}")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        parse_and_bind(&bytes);
    }

    #[test]
    fn random_bytes_after_a_zip_signature_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let mut bytes = b"PK\x03\x04".to_vec();
        bytes.extend(tail);
        bytes.extend_from_slice(b"PK\x05\x06");
        bytes.extend(std::iter::repeat_n(0u8, 18));
        parse_and_bind(&bytes);
    }

    #[test]
    fn flipped_bytes_in_a_real_npz_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        compressed in any::<bool>(),
    ) {
        let mut bytes = if compressed { compressed_npz() } else { real_npz() }.to_vec();
        for (i, v) in flips {
            let at = i.index(bytes.len());
            bytes[at] = v;
        }
        parse_and_bind(&bytes);
    }

    #[test]
    fn truncated_then_extended_npz_never_panics(cut in any::<prop::sample::Index>(), tail in proptest::collection::vec(any::<u8>(), 0..64)) {
        let src = real_npz();
        let mut bytes = src[..cut.index(src.len())].to_vec();
        bytes.extend(tail);
        parse_and_bind(&bytes);
    }

    #[test]
    fn mutated_npy_members_in_valid_zips_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        cut in any::<prop::sample::Index>(),
        deflate in any::<bool>(),
    ) {
        let mut npy = real_npy().to_vec();
        for (i, v) in flips {
            let at = i.index(npy.len());
            npy[at] = v;
        }
        npy.truncate(cut.index(npy.len() + 1));
        parse_and_bind(&wrap(&npy, deflate));
    }

    #[test]
    fn renamed_keys_never_panic_the_binding(
        renames in proptest::collection::vec((any::<prop::sample::Index>(), key()), 0..12),
        drop in proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
        copies in proptest::collection::vec((any::<prop::sample::Index>(), mb_index()), 0..4),
    ) {
        let data = npz::parse(Path::new("real.npz"), real_npz()).unwrap();
        let mut arrays: Vec<(String, deploygen::ir::TensorData)> = data.arrays().unwrap().into_iter().collect();
        // Another mini-batch of an existing key: the array fits its input, so
        // the binding gets past the type checks with an extreme index.
        for (i, mb) in copies {
            let (k, v) = arrays[i.index(arrays.len())].clone();
            arrays.push((format!("mb{mb}_{k}"), v));
        }
        for (i, k) in renames {
            let at = i.index(arrays.len());
            arrays[at].0 = k;
        }
        for i in drop {
            if !arrays.is_empty() {
                let at = i.index(arrays.len());
                arrays.remove(at);
            }
        }
        arrays.sort_by(|a, b| a.0.cmp(&b.0));
        arrays.dedup_by(|a, b| a.0 == b.0);
        let refs: Vec<(&str, &deploygen::ir::TensorData)> = arrays.iter().map(|(k, v)| (k.as_str(), v)).collect();
        parse_and_bind(&npz::write_npz(&refs).unwrap());
    }

    #[test]
    fn random_header_lengths_never_panic(
        version in 1u8..4,
        len in prop_oneof![0u32..200, Just(u32::MAX), Just(u16::MAX as u32), any::<u32>()],
        body in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let mut npy = b"\x93NUMPY".to_vec();
        npy.extend([version, 0]);
        if version == 1 {
            npy.extend_from_slice(&(len as u16).to_le_bytes());
        } else {
            npy.extend_from_slice(&len.to_le_bytes());
        }
        npy.extend(body);
        let _ = npz::parse_npy(&npy);
    }

    #[test]
    fn random_npy_headers_never_panic(
        header in "[{}()\\[\\]',:<>|a-z0-9 _TrueFalsNn\"]{0,120}",
        body in proptest::collection::vec(any::<u8>(), 0..64),
        version in 0u8..5,
    ) {
        let mut npy = b"\x93NUMPY".to_vec();
        npy.extend([version, 0]);
        if version == 1 {
            npy.extend_from_slice(&(header.len() as u16 + 1).to_le_bytes());
        } else {
            npy.extend_from_slice(&(header.len() as u32 + 1).to_le_bytes());
        }
        npy.extend_from_slice(header.as_bytes());
        npy.push(b'\n');
        npy.extend(body);
        let _ = npz::parse_npy(&npy);
    }

    #[test]
    fn plausible_headers_with_random_shapes_never_panic(
        descr in prop::sample::select(vec!["<f4", ">f8", "|b1", "<i8", "<i4", "|u1", "<c8", "|O", "<U3", "f4", "=i2"]),
        fortran in any::<bool>(),
        shape in proptest::collection::vec(prop_oneof![0usize..5, Just(usize::MAX), Just(1usize << 40)], 0..5),
        body in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        let shape = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
        let header = format!("{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}\n",
                             if fortran { "True" } else { "False" });
        let mut npy = b"\x93NUMPY\x01\x00".to_vec();
        npy.extend_from_slice(&(header.len() as u16).to_le_bytes());
        npy.extend_from_slice(header.as_bytes());
        npy.extend(body);
        let _ = npz::parse_npy(&npy);
    }
}
