// What a user of ndarray, candle or PyTorch writes in the first hour compiles.
use typestate_tensor::ndarray::{array, ArrayD};
use typestate_tensor::tensor::Tensor;

#[test]
fn first_hour() -> typestate_tensor::Result<()> {
    // Constructors.
    let x = Tensor::<f32>::ones(&[2, 3])?;
    let e = Tensor::<f64>::eye(3)?;
    let r = Tensor::<f32>::rand(&[2, 3], 42)?;
    let n = Tensor::<f32>::randn(&[2, 3], 42)?;
    let l = Tensor::linspace(0.0f32, 1.0, 5)?;
    let a = Tensor::arange_step(0i64, 10, 3)?;
    let z = r.zeros_like()?;
    let v: Tensor<i32> = vec![1, 2, 3].into();
    let from_nd = Tensor::try_from(&array![[1.0f32, 2.0], [3.0, 4.0]])?;

    // Scalar and owned operators, compound assignment.
    let y = (&x * 2.0)?;
    let y = ((2.0 * &y)? + 1.0)?;
    let w = (x.clone() + &y)?;
    let w = (w - y.clone())?;
    let mut acc = Tensor::<f32>::zeros(&[2, 3])?;
    acc += &w;
    acc *= 0.5;
    acc -= 1.0;
    let neg = (-acc)?;

    // Comparisons with scalars (Rust's `>` returns a bool, so these are methods).
    let mask = n.gt(0.0)?;
    let relu = Tensor::where_cond(&mask, &n, 0.0)?;
    let clipped = n.clamp(-1.0, 1.0)?;

    // Indexing and iteration.
    let mut m = Tensor::<f32>::zeros(&[2, 2])?;
    m[[0, 1]] = 3.0;
    m.set(&[1, 0], 4.0)?;
    assert_eq!(m[[0, 1]], 3.0);
    assert_eq!(m.get(&[1, 0])?, 4.0);
    for v in &mut m {
        *v += 1.0;
    }
    let total: f32 = m.iter().sum();
    let transposed: Vec<f32> = m.t().iter().copied().collect();
    for (index, value) in m.indexed_iter() {
        let _ = (index[0], *value);
    }
    for value in m.clone() {
        let _ = value;
    }
    assert_eq!(v[1], 2);

    // Joining, equality, conversions back.
    let c = Tensor::cat(&[&x, &y], 0)?;
    let s = Tensor::stack(&[&x, &y], 0)?;
    assert_eq!(c.shape(), [4, 3]);
    assert_eq!(s.shape(), [2, 2, 3]);
    assert!(x == Tensor::ones(&[2, 3])?);
    let back = ArrayD::try_from(&from_nd)?;
    let one = Tensor::from_vec(&[1], vec![7.5f32])?.item()?;

    // Printing.
    println!("{x}\n{e:?}\n{l}\n{a}\n{z}\n{neg}\n{relu:.2}\n{clipped}\n{total} {transposed:?} {back} {one}");
    Ok(())
}
