//! PyTorch's shape rules for `matmul` (`torch.matmul`'s documentation): which dims multiply,
//! which broadcast, and what shape the product has.

use crate::error::LayoutError;
use crate::layout::broadcast_shapes;

/// The product `a · b` resolved to one batched matrix product `[B.., m, k] · [B.., k, n]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MatmulShapes {
    /// The broadcast batch dims `B..` (empty for a 1-D or 2-D product).
    pub batch: Vec<usize>,
    /// Rows of the product.
    pub m: usize,
    /// The contracted extent.
    pub k: usize,
    /// Columns of the product.
    pub n: usize,
    /// `a` was 1-D: a row `[1, k]` whose row dim the result drops.
    pub a_vector: bool,
    /// `b` was 1-D: a column `[k, 1]` whose column dim the result drops.
    pub b_vector: bool,
}

fn mismatch(op: &'static str, a: &[usize], b: &[usize], reason: &'static str) -> LayoutError {
    LayoutError::MatmulMismatch {
        op,
        lhs: a.to_vec(),
        rhs: b.to_vec(),
        reason,
    }
}

impl MatmulShapes {
    /// Resolves `torch.matmul`'s rules: 1-D · 1-D is a dot product (a 0-d result); a 1-D left
    /// operand is a row and a 1-D right operand a column, their extra dim dropped from the
    /// result; operands of rank ≥ 3 are stacks of matrices whose batch dims broadcast
    /// (NumPy's rules), a 2-D operand being one matrix for every batch index.
    pub fn resolve(op: &'static str, a: &[usize], b: &[usize]) -> Result<Self, LayoutError> {
        if a.is_empty() || b.is_empty() {
            return Err(mismatch(
                op,
                a,
                b,
                "both operands need at least one dim (a 0-d tensor is a scalar: use `mul`)",
            ));
        }
        let a_vector = a.len() == 1;
        let b_vector = b.len() == 1;
        let (a_batch, m, k) = match a {
            [k] => (&[][..], 1, *k),
            [batch @ .., m, k] => (batch, *m, *k),
            [] => unreachable!("checked above"),
        };
        let (b_batch, kb, n) = match b {
            [k] => (&[][..], *k, 1),
            [batch @ .., k, n] => (batch, *k, *n),
            [] => unreachable!("checked above"),
        };
        if k != kb {
            let reason = if b_vector {
                "the left operand's last dim differs from the right operand's length"
            } else {
                "the left operand's last dim differs from the right operand's second-to-last dim"
            };
            return Err(mismatch(op, a, b, reason));
        }
        let batch = broadcast_shapes(op, a_batch, b_batch).map_err(|_| {
            mismatch(
                op,
                a,
                b,
                "their batch dims (all but the last two) do not broadcast",
            )
        })?;
        Ok(MatmulShapes {
            batch,
            m,
            k,
            n,
            a_vector,
            b_vector,
        })
    }

    fn with(&self, rows: usize, cols: usize) -> Vec<usize> {
        let mut s = self.batch.clone();
        s.extend([rows, cols]);
        s
    }

    /// The left operand as the engine sees it, `[B.., m, k]`.
    pub fn full_a(&self) -> Vec<usize> {
        self.with(self.m, self.k)
    }

    /// The right operand as the engine sees it, `[B.., k, n]`.
    pub fn full_b(&self) -> Vec<usize> {
        self.with(self.k, self.n)
    }

    /// The product as the engine writes it, `[B.., m, n]`.
    pub fn full_out(&self) -> Vec<usize> {
        self.with(self.m, self.n)
    }

    /// The product's shape for the caller: [`Self::full_out`] without the dims of 1-D operands.
    pub fn out(&self) -> Vec<usize> {
        let mut s = self.batch.clone();
        if !self.a_vector {
            s.push(self.m);
        }
        if !self.b_vector {
            s.push(self.n);
        }
        s
    }

    /// Multiply-adds of the product (for benchmarks' FLOP counts: twice this).
    #[cfg(test)]
    pub fn macs(&self) -> usize {
        self.batch.iter().product::<usize>() * self.m * self.k * self.n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(a: &[usize], b: &[usize]) -> Vec<usize> {
        MatmulShapes::resolve("matmul", a, b).unwrap().out()
    }

    /// Every case of `torch.matmul`'s documentation, with the shapes PyTorch gives.
    #[test]
    fn shapes_follow_torch_matmul() {
        assert_eq!(out(&[3], &[3]), Vec::<usize>::new());
        assert_eq!(out(&[2, 3], &[3, 4]), vec![2, 4]);
        assert_eq!(out(&[3], &[3, 4]), vec![4]);
        assert_eq!(out(&[2, 3], &[3]), vec![2]);
        assert_eq!(out(&[10, 3, 4], &[4]), vec![10, 3]);
        assert_eq!(out(&[10, 3, 4], &[10, 4, 5]), vec![10, 3, 5]);
        assert_eq!(out(&[10, 3, 4], &[4, 5]), vec![10, 3, 5]);
        assert_eq!(out(&[4], &[10, 4, 5]), vec![10, 5]);
        assert_eq!(out(&[10, 1, 3, 4], &[5, 4, 6]), vec![10, 5, 3, 6]);
        assert_eq!(out(&[0, 3], &[3, 0]), vec![0, 0]);
        let s = MatmulShapes::resolve("matmul", &[10, 1, 3, 4], &[5, 4, 6]).unwrap();
        assert_eq!(s.full_a(), vec![10, 5, 3, 4]);
        assert_eq!(s.full_b(), vec![10, 5, 4, 6]);
        assert_eq!(s.macs(), 10 * 5 * 3 * 4 * 6);
    }

    #[test]
    fn misfits_name_both_shapes_and_the_reason() {
        let e = MatmulShapes::resolve("matmul", &[2, 3], &[4, 5]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "matmul: shapes [2, 3] and [4, 5] cannot be multiplied: the left operand's last dim differs from the right operand's second-to-last dim"
        );
        let e = MatmulShapes::resolve("matmul", &[2, 2, 3], &[3, 3, 4]).unwrap_err();
        assert!(
            e.to_string()
                .contains("batch dims (all but the last two) do not broadcast"),
            "{e}"
        );
        let e = MatmulShapes::resolve("matmul", &[], &[3]).unwrap_err();
        assert!(e.to_string().contains("at least one dim"), "{e}");
    }
}
